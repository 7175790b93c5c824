// SPDX-License-Identifier: LGPL-2.1 OR MIT
module dq.example/example

go 1.19

require dq.example/dq v0.0.0

replace dq.example/dq => ../dq
