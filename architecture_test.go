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

// TestArchitectureNamesExist keeps ARCHITECTURE.md true about the code: every
// `pkg.Name` (and `pkg.Name.Field`) it cites, where pkg is a package of the
// repository, is declared in that package's non-test files, and every path
// it cites (`internal/mono`, `provider/openai`) is a directory.
func TestArchitectureNamesExist(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string][]byte{} // package name -> its non-test sources, joined
	dirs := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			dirs[filepath.ToSlash(path)] = true
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg := filepath.Base(filepath.Dir(path))
		if filepath.Dir(path) == "." {
			pkg = "portico"
		}
		srcs[pkg] = append(srcs[pkg], src...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9]*)((?:\\.[A-Z][A-Za-z0-9]*)+)").FindAllSubmatch(doc, -1) {
		src, ok := srcs[string(m[1])]
		if !ok {
			continue // a standard library or third-party package
		}
		for _, name := range strings.Split(string(m[2])[1:], ".") {
			decl := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?|type |var |const |\t+)` + name + `\b`)
			if !decl.Match(src) {
				t.Errorf("ARCHITECTURE.md cites %s%s: package %s declares no %s", m[1], m[2], m[1], name)
			}
		}
	}
	for _, m := range regexp.MustCompile("`((?:internal|provider|modeltest|redisstore|examples|bench)(?:/[a-z0-9]+)+)`").FindAllSubmatch(doc, -1) {
		if !dirs[string(m[1])] {
			t.Errorf("ARCHITECTURE.md cites %s, which is no directory", m[1])
		}
	}
}

// TestPackageDocListsEveryPackage keeps the root package doc's list of
// packages whole: every importable package of the workspace's modules (not
// internal, examples or benchmarks) is named in its "# Packages" section.
func TestPackageDocListsEveryPackage(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	i := strings.Index(doc, "// # Packages")
	if i < 0 {
		t.Fatal(`doc.go has no "# Packages" section`)
	}
	list := doc[i:]
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == "." {
			return err
		}
		switch d.Name() {
		case "internal", "testdata", "examples", "bench", "docs", "cmd":
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		gos, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(gos) == 0 {
			return nil
		}
		if name := filepath.ToSlash(path); !regexp.MustCompile(`\b` + name + `\b`).MatchString(list) {
			t.Errorf("package %s is missing from doc.go's list of packages", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestArchitectureListsTheCoreRequirements keeps the Modules section's list
// of the core module's libraries whole: every direct requirement of go.mod
// is named there by its module path.
func TestArchitectureListsTheCoreRequirements(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	req := regexp.MustCompile(`(?m)^\t([a-z0-9.]+/[^ ]+) v[^ ]+$`).FindAllSubmatch(mod, -1)
	if len(req) == 0 {
		t.Fatal("go.mod lists no direct requirement; the pattern no longer matches its style")
	}
	for _, m := range req {
		path := string(m[1])
		name := path
		if i := strings.Index(path, "go.opentelemetry.io/otel/"); i == 0 {
			name = "`" + strings.TrimPrefix(path, "go.opentelemetry.io/otel/") + "`" // named as a module of otel
		} else {
			name = "`" + path + "`"
		}
		if !strings.Contains(string(doc), name) {
			t.Errorf("go.mod requires %s, which ARCHITECTURE.md does not name", path)
		}
	}
}
