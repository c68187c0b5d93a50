// kiln: a tensor compiler. Include this one header.
#pragma once
#include "kiln/array.h"
#include "kiln/compile.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
