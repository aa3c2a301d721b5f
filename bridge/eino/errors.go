package eino

import "fmt"

// errorf is fmt.Errorf, its message prefixed with the package's name.
func errorf(format string, args ...any) error { return fmt.Errorf("eino: "+format, args...) }
