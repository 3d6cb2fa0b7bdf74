// kick_linux.go declares two functions of the Go runtime by go:linkname,
// without bodies; an assembly file in the package lets the compiler accept
// that. It holds no code.
