// The plugin ABI is a header (include/speechgraph/plugin.h); this file only checks that it compiles.
#include "speechgraph/plugin.h"
