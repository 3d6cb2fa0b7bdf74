//go:build !unix

package thread_test

import "time"

// processCPU is not known here: -1.
func processCPU() time.Duration { return -1 }
