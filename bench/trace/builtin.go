package trace

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed traces/*.trace
var builtin embed.FS

// Builtin returns the embedded trace called name (for instance "steady50").
func Builtin(name string) (*Trace, error) {
	f, err := builtin.Open(path.Join("traces", name+".trace"))
	if err != nil {
		return nil, fmt.Errorf("trace: no built-in trace %q (have %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	defer f.Close()
	return Parse(f)
}

// BuiltinNames lists the embedded traces, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtin, "traces") // the folder is embedded, so it exists
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".trace"))
	}
	slices.Sort(names)
	return names
}
