package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// builtPackage is what one ecosystem's build made: the files, and the command that installs
// them in a project ("" when the tool to build them is missing, with why in note).
type builtPackage struct {
	ecosystem string
	files     []string
	install   string
	note      string
}

// buildPackages builds the npm packages and the Python wheel from the binaries in out (the
// scripts skip the platforms not built), each only where its tool is installed.
func buildPackages(out, version string) ([]builtPackage, error) {
	npm := builtPackage{ecosystem: "npm"}
	if _, err := exec.LookPath("node"); err != nil {
		npm.note = "not built: node is not installed"
	} else {
		args := []string{"packaging/npm/build.mjs", "--dist", out, "--out", filepath.Join(out, "npm")}
		if version != "" {
			args = append(args, "--version", version)
		}
		files, err := runScript("node", args...)
		if err != nil {
			return nil, err
		}
		npm.files = files
		npm.install = "npm install -D " + strings.Join(mainPackageFirst(files), " ")
	}
	wheel := builtPackage{ecosystem: "Python"}
	python := "python3"
	if runtime.GOOS == "windows" {
		python = "python"
	}
	if _, err := exec.LookPath(python); err != nil {
		wheel.note = "not built: " + python + " is not installed"
	} else {
		args := []string{"packaging/python/build_wheel.py", "--dist", out, "--out", filepath.Join(out, "python")}
		if version != "" {
			args = append(args, "--version", version)
		}
		files, err := runScript(python, args...)
		if err != nil {
			return nil, err
		}
		wheel.files = files
		wheel.install = "pip install " + strings.Join(files, " ")
	}
	return []builtPackage{npm, wheel}, nil
}

// runScript runs a packaging script and returns the files it printed, one a line, made
// absolute so that the install commands work from any project. Its notes of platforms not
// built are dropped; everything it said is shown if it fails.
func runScript(name string, args ...string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			files = append(files, mustAbs(line))
		}
	}
	return files, nil
}

// mainPackageFirst orders npm tarballs with @tabuladb/tabula before the platform packages,
// as the README writes them.
func mainPackageFirst(files []string) []string {
	var main, platform []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "tabuladb-tabula-") && !isPlatformTarball(filepath.Base(f)) {
			main = append(main, f)
		} else {
			platform = append(platform, f)
		}
	}
	return append(main, platform...)
}

func isPlatformTarball(base string) bool {
	for _, os := range []string{"linux", "darwin", "win32"} {
		if strings.HasPrefix(base, "tabuladb-tabula-"+os+"-") {
			return true
		}
	}
	return false
}

// printNext says where each artefact went and the command to run next.
func printNext(w io.Writer, out string, targets []string, built []builtPackage) {
	fmt.Fprintf(w, "\nBuilt in %s:\n", mustAbs(out))
	for _, s := range targets {
		t, err := parseTarget(s)
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "  tabula for %-14s %s\n", s, mustAbs(filepath.Join(out, "bin", t.String(), t.exe())))
	}
	for _, b := range built {
		if b.note != "" {
			fmt.Fprintf(w, "  %-25s %s\n", b.ecosystem+" packages", b.note)
			continue
		}
		for i, f := range b.files {
			label := ""
			if i == 0 {
				label = b.ecosystem + " packages"
			}
			fmt.Fprintf(w, "  %-25s %s\n", label, f)
		}
	}
	fmt.Fprintln(w, "Next:")
	host := hostTarget()
	if t, err := parseTarget(host); err == nil && slices.Contains(targets, host) {
		fmt.Fprintf(w, "  serve:  %s serve --in-memory\n", mustAbs(filepath.Join(out, "bin", t.String(), t.exe())))
	}
	for _, b := range built {
		if b.install != "" {
			fmt.Fprintf(w, "  %-7s in your project: %s\n", b.ecosystem+":", b.install)
		}
	}
	if built == nil {
		fmt.Fprintln(w, "  npm packages and the Python wheel: go run ./packaging/release -packages")
	}
}
