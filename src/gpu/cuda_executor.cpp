// The CUDA executor (cuda.h).
#include "tapestry/gpu/cuda.h"
