// Nothing to import: this target only exports `speechgraph_plugin_abi` from every Swift plugin.
#include "speechgraph/plugin.h"
