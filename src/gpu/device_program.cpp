// DeviceProgram planning (device_program.h).
#include "device_program.h"

namespace tapestry::gpu {

}  // namespace tapestry::gpu
