package apisurface

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata with the module's exported identifiers as they are now")

// moduleRoot is the directory of the module's go.mod, two levels above this package.
const moduleRoot = "../.."

// surface lists the exported identifiers of the package in dir, one a line, sorted: package-level
// constants, variables, functions and types, and the exported methods and fields of exported
// types, each as "Name kind" ("Server type", "Server.ServeHTTP method", "Options.Dir field").
// Every non-test file counts whatever its build constraints, so the list is the same on every
// platform. It reports false if dir holds no Go package.
func surface(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	found := false
	add := func(line string) { seen[line] = true }
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		found = true
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add(d.Name.Name + " func")
				} else if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					add(recv + "." + d.Name.Name + " method")
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								add(n.Name + " " + d.Tok.String())
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							add(s.Name.Name + " type")
							members(s.Name.Name, s.Type, add)
						}
					}
				}
			}
		}
	}
	lines := make([]string, 0, len(seen))
	for l := range seen {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return lines, found
}

// receiverType is the name of a method's receiver type: T for T, *T, T[K] and *T[K].
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// members adds the exported fields of a struct type and the exported methods of an interface
// type declared as typ, embedded ones by the name of the type they embed.
func members(owner string, typ ast.Expr, add func(string)) {
	var list *ast.FieldList
	kind := "field"
	switch t := typ.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, "method"
	default:
		return
	}
	for _, f := range list.List {
		if len(f.Names) == 0 {
			if _, isFunc := f.Type.(*ast.FuncType); !isFunc {
				if n := receiverType(f.Type); ast.IsExported(n) {
					add(owner + "." + n + " embedded")
				}
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				add(owner + "." + n.Name + " " + kind)
			}
		}
	}
}

// packageDirs lists the module-relative directories that hold the module's packages: every
// directory but testdata, hidden ones and those Go ignores (leading "_" or ".").
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != moduleRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(moduleRoot, path)
		if err != nil {
			return err
		}
		if path != moduleRoot {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		dirs = append(dirs, filepath.ToSlash(rel))
		return nil
	})
	require.NoError(t, err)
	return dirs
}

// goldenName is the file under testdata that lists the package in the module-relative dir:
// "root.api" for the root package, "cmd_tabula.api" for cmd/tabula.
func goldenName(dir string) string {
	if dir == "." {
		return "root.api"
	}
	return strings.ReplaceAll(dir, "/", "_") + ".api"
}

// Every package's exported identifiers are the ones listed in its file under testdata, and
// every file there lists a package that exists.
func TestExportedIdentifiers(t *testing.T) {
	want := map[string]bool{}
	for _, dir := range packageDirs(t) {
		lines, ok := surface(t, filepath.Join(moduleRoot, dir))
		if !ok {
			continue
		}
		name := goldenName(dir)
		want[name] = true
		got := strings.Join(lines, "\n") + "\n"
		if len(lines) == 0 {
			got = ""
		}
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		golden, err := os.ReadFile(path)
		if !assert.NoError(t, err, "%s is a package with no list; run go test ./internal/apisurface -update", dir) {
			continue
		}
		pkg := dir
		if dir == "." {
			pkg = "the root package"
		}
		assert.Equal(t, string(golden), got,
			"the exported identifiers of %s changed; if on purpose, run go test ./internal/apisurface -update and commit testdata/%s", pkg, name)
	}
	files, err := os.ReadDir("testdata")
	require.NoError(t, err)
	for _, f := range files {
		if want[f.Name()] {
			continue
		}
		if *update {
			require.NoError(t, os.Remove(filepath.Join("testdata", f.Name())))
			continue
		}
		t.Errorf("testdata/%s lists a package that no longer exists; run go test ./internal/apisurface -update", f.Name())
	}
}

// The lister sees what a package exports and nothing it does not.
func TestSurfaceListsExportsOnly(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const Exported, unexported = 1, 2

var V int

type T struct {
	F, g int
	Embedded
	*Other
}

type Embedded struct{}
type Other struct{}

type I interface {
	M()
	m()
	Embedded2
}

type Embedded2 interface{}

type G[K comparable] struct{}

func (G[K]) Get() {}
func (*T) M()     {}
func (*T) m()     {}
func F()          {}
func f()          {}

type hidden struct{ F int }

func (hidden) M() {}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc TestOnly() {}\n"), 0o644))
	got, ok := surface(t, dir)
	require.True(t, ok)
	assert.Equal(t, []string{
		"Embedded type", "Embedded2 type", "Exported const", "F func",
		"G type", "G.Get method",
		"I type", "I.Embedded2 embedded", "I.M method",
		"Other type",
		"T type", "T.Embedded embedded", "T.F field", "T.M method", "T.Other embedded",
		"V var",
	}, got)
}
