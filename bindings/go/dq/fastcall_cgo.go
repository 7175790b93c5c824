// SPDX-License-Identifier: LGPL-2.1 OR MIT

//go:build race || dq_cgocall || go1.27

package dq

/*
#include "glue.h"
*/
import "C"

// Under the race detector, with the dq_cgocall build tag, or from Go 1.27
// on, every call is a cgo call (see fastcall.go): fastCalls is false, so
// no Queue is fast and nothing calls fastcall.

const fastCalls = false

func fastcall(*C.struct_dqgo_fc) { panic("dq: fast call in a build without them") }
