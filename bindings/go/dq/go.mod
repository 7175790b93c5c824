// SPDX-License-Identifier: LGPL-2.1 OR MIT
module dq.example/dq

go 1.19
