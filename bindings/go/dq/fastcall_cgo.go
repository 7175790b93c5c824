// SPDX-License-Identifier: LGPL-2.1 OR MIT

//go:build race || dq_cgocall

package dq

/*
#include "glue.h"
*/
import "C"

// Under the race detector or the dq_cgocall build tag every call is a cgo
// call (see fastcall.go): fastCalls is false, so no Queue is fast and
// nothing calls fastcall.

const fastCalls = false

func fastcall(*C.struct_dqgo_fc) { panic("dq: fast call in a build without them") }
