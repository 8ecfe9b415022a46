// The engine API's error is the engine's one error type (engine/base/error.h),
// re-exported here because cli/ includes only api/ and ir/.
#pragma once
#include "engine/base/error.h"
