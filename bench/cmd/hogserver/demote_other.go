//go:build !linux

package main

// demoteSelf does nothing where the OS has no idle class at hand.
func demoteSelf() {}
