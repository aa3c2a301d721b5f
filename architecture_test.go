package portico_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureCitesTestsThatExist keeps ARCHITECTURE.md true: every
// test, fuzz target, example or benchmark it names in backquotes is a
// function in some _test.go file of the repository (any module).
func TestArchitectureCitesTestsThatExist(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile("`((?:Test|Fuzz|Example|Benchmark)[A-Za-z0-9_]*)`").FindAllSubmatch(doc, -1)
	if len(cited) == 0 {
		t.Fatal("ARCHITECTURE.md cites no test; the pattern no longer matches its style")
	}
	defined := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Example|Benchmark)[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cited {
		if name := string(m[1]); !defined[name] {
			t.Errorf("ARCHITECTURE.md cites %s, which no _test.go file defines", name)
		}
	}
}
