package layering

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/tabuladb/tabula"

// pkg is one package of the module as go list describes it.
type pkg struct {
	path    string   // relative to the module: "" for the root package, "server", …
	imports []string // its direct imports, module paths made relative ("" is the root)
	deps    []string // everything it builds on, the same way
}

// rule forbids packages matching from from importing packages matching to: directly, or,
// with transitive, anywhere below them.
type rule struct {
	from, to   string // a module-relative path, "std" (the standard library) or "*"; a trailing "/..." matches below it
	transitive bool
	why        string
}

// The layering (see doc.go), as what must not be imported. Third-party modules are named by
// their full path.
var rules = []rule{
	{"odata", "local", false, "odata knows the filter language and nothing of storage, ranges or the engine"},
	{"partition", "local", false, "partition knows ranges, statistics and rates, nothing of storage, filters or the engine"},
	{"storage", "local", false, "storage knows Badger and nothing of Azure"},
	{"internal/...", "layers", false, "internal/ is machinery shared by the layers above it"},
	{"", "layers", false, "the engine is below the wire, the client and the fakes"},
	{"", "github.com/dgraph-io/badger/...", false, "only storage knows Badger"},
	{"server", "github.com/dgraph-io/badger/...", false, "only storage knows Badger"},
	{"badgerless", "internal/badgertuning", false, "only storage, and bench's raw-Badger baselines, tune Badger"},
	{"programs", "storage", false, "programs reach the store through the engine"},
	{"server", "storage", false, "the wire reaches the store through the engine"},
	{"server", "remote", false, "the server does not depend on the client"},
	{"server", "tabulatest/...", false, "the server does not depend on the fakes"},
	{"remote", "server", true, "a program that dials a storage account must not link the HTTP server"},
	{"remote", "storage", false, "the client reaches the store only through the service"},
	{"*", "programs", false, "programs are not imported"},
	{"notbench", "bench/...", false, "benchmarks are not imported (bench's own programs share its workloads)"},
	{"nontest", "github.com/stretchr/testify/...", false, "testify is for tests (tabulatest/conformance is a test suite, so it may)"},
}

// groups name sets of packages for rules.
var groups = map[string][]string{
	// local: every package of the module except internal/.
	"local": {"", "odata", "partition", "storage", "server", "remote", "tabulatest/...", "cmd/...", "bench/...", "examples/..."},
	// layers: what the leaves and internal/ must not import.
	"layers": {"", "server", "remote", "tabulatest/...", "cmd/...", "bench/...", "examples/..."},
	// badgerless: what knows nothing of Badger.
	"badgerless": {"", "odata", "partition", "server", "remote", "tabulatest/...", "cmd/...", "examples/...", "internal/..."},
	// programs: what nothing imports.
	"programs": {"cmd/...", "examples/..."},
	// notbench: everything outside bench/.
	"notbench": {"", "odata", "partition", "storage", "server", "remote", "tabulatest/...", "internal/...", "cmd/...", "examples/..."},
	// nontest: every package but the conformance suite, whose job is testing.
	"nontest": {"", "odata", "partition", "storage", "server", "remote", "tabulatest", "internal/...", "cmd/...", "bench/...", "examples/..."},
}

func matches(pattern, path string) bool {
	if members, ok := groups[pattern]; ok {
		for _, m := range members {
			if matches(m, path) {
				return true
			}
		}
		return false
	}
	if pattern == "*" {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return pattern == path
}

// relative turns an import path of the module into its module-relative form; others stay.
func relative(p string) string {
	if p == module {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, module+"/"); ok {
		return rest
	}
	return p
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	// Non-test imports only: a test may import anything it tests against.
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}", module+"/...").Output()
	require.NoError(t, err, "go list")
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		require.Len(t, fields, 3, line)
		p := pkg{path: relative(fields[0])}
		for _, i := range strings.Split(fields[1], ",") {
			if i != "" {
				p.imports = append(p.imports, relative(i))
			}
		}
		for _, d := range strings.Split(fields[2], ",") {
			if d != "" {
				p.deps = append(p.deps, relative(d))
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// violations lists every import that breaks a rule, as "from imports to: why".
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !matches(r.from, p.path) {
				continue
			}
			imported := p.imports
			if r.transitive {
				imported = p.deps
			}
			for _, i := range imported {
				if i != p.path && matches(r.to, i) {
					out = append(out, name(p.path)+" imports "+name(i)+": "+r.why)
				}
			}
		}
	}
	return out
}

func name(rel string) string {
	if rel == "" {
		return module
	}
	return rel
}

func TestPackageLayering(t *testing.T) {
	pkgs := listPackages(t)
	require.NotEmpty(t, pkgs)
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// The rules catch what they are there for: each of these imports breaks one.
func TestLayeringRulesCatchLeaks(t *testing.T) {
	for _, leak := range []pkg{
		{path: "odata", imports: []string{"storage"}},
		{path: "storage", imports: []string{""}},
		{path: "partition", imports: []string{"odata"}},
		{path: "", imports: []string{"server"}},
		{path: "", imports: []string{"github.com/dgraph-io/badger/v4"}},
		{path: "internal/wire", imports: []string{""}},
		{path: "remote", deps: []string{"", "server"}},
		{path: "server", imports: []string{"github.com/stretchr/testify/require"}},
		{path: "tabulatest", imports: []string{"cmd/tabula"}},
	} {
		if len(violations([]pkg{leak})) == 0 {
			t.Errorf("%s importing %v%v breaks no rule", name(leak.path), leak.imports, leak.deps)
		}
	}
	require.Empty(t, violations([]pkg{{path: "tabulatest/conformance", imports: []string{"github.com/stretchr/testify/require"}}}),
		"the conformance suite is a test suite")
}
