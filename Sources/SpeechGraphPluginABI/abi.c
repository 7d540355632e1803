// The ABI version a plugin written with SpeechGraphPluginKit was built against, exported as the data symbol
// the host reads before it runs any of the plugin's code.
#include "speechgraph/plugin.h"

SG_PLUGIN_ABI_VERSION;
