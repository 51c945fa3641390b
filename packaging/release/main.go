// Command release builds Tabula's release artefacts into dist/ (ignored by git):
//
//	dist/bin/<os>_<arch>/tabula[.exe]       the static binaries, version stamped in
//	dist/tabula_<version>_<os>_<arch>.tar.gz (zip for windows) each binary with README.md
//	dist/checksums.txt                        SHA-256 of every archive, sorted by name
//
// for this machine's platform, or with -all for linux, darwin and windows on amd64 and arm64;
// with -packages, also the npm packages and the Python wheel of those binaries (with node and
// python3, where they are installed), and with -image the container images of the linux
// binaries from the repository's Dockerfile. It ends by saying where each artefact went and
// the command that installs it. Run it from the repository root:
//
//	go run ./packaging/release -packages            # this machine: binary, npm packages, wheel
//	go run ./packaging/release                      # this machine's binary and archive only
//	go run ./packaging/release -all                 # all six platforms
//	go run ./packaging/release -all -version v1.2.3
//	go run ./packaging/release -targets linux/amd64,linux/arm64 -image localhost/tabula
//
// The same commit gives the same bytes: binaries are built with -trimpath, no build ID and
// no VCS stamp (the version says the commit), with cgo off; archives list their entries in
// a fixed order, owned by 0:0, dated by the commit's time (or $SOURCE_DATE_EPOCH). Every
// binary is checked after it is built (right format and architecture; on linux, static: no
// interpreter, no shared libraries), and the image is built only from binaries this run has
// just built and checked, so it is never stale.
//
// Why not GoReleaser, which does all of this: installed from the module proxy at a pinned
// version (go install github.com/goreleaser/goreleaser/v2@v2.12.7) it is 327 modules (cloud
// SDKs, signing, publishing) and a 126 MB binary that took 3m12s of CPU to download and
// compile on a CI-sized machine, on every fresh CI run, for what needs only the standard
// library here.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// allTargets are the platforms a release covers.
var allTargets = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

func main() {
	out := flag.String("out", "dist", "`directory` to write the artefacts to")
	version := flag.String("version", "", "`version` to stamp in (default: git describe --tags --always --dirty)")
	targets := flag.String("targets", hostTarget(), "comma-separated `os/arch` list, or all (default: this machine's)")
	all := flag.Bool("all", false, "build every platform: "+strings.Join(allTargets, ", "))
	packages := flag.Bool("packages", false, "also build the npm packages (needs node and npm) and the Python wheel (needs python3)")
	image := flag.String("image", "", "also build the container image of each linux target, tagged `repo`:<version>-<arch>")
	tool := flag.String("container-tool", "podman", "`command` (with its global flags) that builds images: podman or docker")
	flag.Parse()
	if flag.NArg() > 0 {
		fatal(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	list := strings.Split(*targets, ",")
	if *all || *targets == "all" {
		list = allTargets
	}
	if err := release(*out, *version, list, *image, strings.Fields(*tool)); err != nil {
		fatal(err)
	}
	var built []builtPackage
	if *packages {
		var err error
		if built, err = buildPackages(*out, *version); err != nil {
			fatal(err)
		}
	}
	printNext(os.Stdout, *out, list, built)
}

// hostTarget is this machine's platform, or linux/amd64 where the release covers none.
func hostTarget() string {
	host := runtime.GOOS + "/" + runtime.GOARCH
	if slices.Contains(allTargets, host) {
		return host
	}
	return "linux/amd64"
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}

// target is one platform.
type target struct{ goos, goarch string }

func parseTarget(s string) (target, error) {
	goos, goarch, ok := strings.Cut(strings.TrimSpace(s), "/")
	t := target{goos, goarch}
	for _, known := range allTargets {
		if ok && known == goos+"/"+goarch {
			return t, nil
		}
	}
	return t, fmt.Errorf("target %q: want one of %s", s, strings.Join(allTargets, ", "))
}

func (t target) String() string { return t.goos + "_" + t.goarch }

// exe is the binary's file name on the target.
func (t target) exe() string {
	if t.goos == "windows" {
		return "tabula.exe"
	}
	return "tabula"
}

func release(out, version string, targetList []string, image string, tool []string) error {
	var ts []target
	for _, s := range targetList {
		t, err := parseTarget(s)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if version == "" {
		version = gitVersion()
	}
	if strings.ContainsAny(version, " \t\n'\"/\\") {
		return fmt.Errorf("version %q: no spaces, quotes or slashes", version)
	}
	mtime := sourceDate()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var sums []string
	for _, t := range ts {
		bin, err := build(out, version, t)
		if err != nil {
			return err
		}
		name, err := writeArchive(out, version, t, bin, readme, mtime)
		if err != nil {
			return err
		}
		sum, err := sha256File(filepath.Join(out, name))
		if err != nil {
			return err
		}
		sums = append(sums, sum+"  "+name+"\n")
		fmt.Printf("%s  %s\n", name, sum)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i][66:] < sums[j][66:] })
	if err := os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(strings.Join(sums, "")), 0o644); err != nil {
		return err
	}
	if image != "" {
		return buildImages(out, version, ts, image, tool)
	}
	return nil
}

// gitVersion names the checked-out commit, as git describe does; "devel" outside git.
func gitVersion() string {
	v, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil || len(bytes.TrimSpace(v)) == 0 {
		return "devel"
	}
	return string(bytes.TrimSpace(v))
}

// sourceDate is the time archives give their entries: $SOURCE_DATE_EPOCH, else the commit's
// time, else the Unix epoch; never the clock, so that a rebuild gives the same bytes.
func sourceDate() time.Time {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		if v, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
			s = string(bytes.TrimSpace(v))
		}
	}
	if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(sec, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

// build compiles cmd/tabula for t into out/bin/<os>_<arch>/ and checks the result.
func build(out, version string, t target) (string, error) {
	bin := filepath.Join(out, "bin", t.String(), t.exe())
	if err := os.RemoveAll(filepath.Dir(bin)); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid= -X main.version="+version, "-o", bin, "./cmd/tabula")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.goos, "GOARCH="+t.goarch, "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w", t, err)
	}
	if err := checkBinary(bin, t); err != nil {
		return "", err
	}
	return bin, nil
}

// checkBinary fails unless bin is an executable for t that needs nothing from the system
// beyond what every installation of t has: on linux no program interpreter and no shared
// library at all (it runs in an empty container image), on darwin only what every Go
// program without cgo links there and every macOS has (libSystem, libresolv, the system
// frameworks).
func checkBinary(bin string, t target) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s is not a static %s executable: "+format, append([]any{bin, t}, args...)...)
	}
	switch t.goos {
	case "linux":
		f, err := elf.Open(bin)
		if err != nil {
			return fail("%v", err)
		}
		defer f.Close()
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[t.goarch]
		if f.Machine != want {
			return fail("machine %v", f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				return fail("it has a %v segment (dynamically linked)", p.Type)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			return fail("it needs %v", libs)
		}
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			return fail("%v", err)
		}
		defer f.Close()
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[t.goarch]
		if f.Cpu != want {
			return fail("cpu %v", f.Cpu)
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fail("%v", err)
		}
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/libSystem.") && !strings.HasPrefix(l, "/usr/lib/libresolv.") &&
				!strings.HasPrefix(l, "/System/Library/Frameworks/") {
				return fail("it needs %s", l)
			}
		}
	case "windows":
		f, err := pe.Open(bin)
		if err != nil {
			return fail("%v", err)
		}
		defer f.Close()
		want := map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64}[t.goarch]
		if f.Machine != want {
			return fail("machine %#x", f.Machine)
		}
	}
	return nil
}

// writeArchive packs the binary and README.md into out/tabula_<version>_<os>_<arch>.tar.gz
// (.zip for windows), the same bytes for the same inputs, and returns its file name.
func writeArchive(out, version string, t target, bin string, readme []byte, mtime time.Time) (string, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	files := []archiveFile{{t.exe(), 0o755, exe}, {"README.md", 0o644, readme}}
	var buf bytes.Buffer
	name := "tabula_" + version + "_" + t.String()
	if t.goos == "windows" {
		name += ".zip"
		err = writeZip(&buf, files, mtime)
	} else {
		name += ".tar.gz"
		err = writeTarGz(&buf, files, mtime)
	}
	if err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(out, name), buf.Bytes(), 0o644)
}

// archiveFile is one entry of an archive.
type archiveFile struct {
	name string
	mode int64
	data []byte
}

// writeTarGz writes files, sorted by name, owned by 0:0 and dated mtime, gzipped with no
// name and no time in the gzip header.
func writeTarGz(w io.Writer, files []archiveFile, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, f := range sorted(files) {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: mtime, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes files, sorted by name, deflated and dated mtime.
func writeZip(w io.Writer, files []archiveFile, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range sorted(files) {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(os.FileMode(f.mode))
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

func sorted(files []archiveFile) []archiveFile {
	s := append([]archiveFile(nil), files...)
	sort.Slice(s, func(i, j int) bool { return s[i].name < s[j].name })
	return s
}

func sha256File(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// buildImages builds the Dockerfile's image for each linux target from the binaries just
// built, tagged repo:<version>-<arch>. The build context holds only those binaries and an
// empty data directory (see .dockerignore).
func buildImages(out, version string, ts []target, repo string, tool []string) error {
	if len(tool) == 0 {
		return errors.New("-container-tool is empty")
	}
	if abs, _ := filepath.Abs(out); abs != mustAbs("dist") {
		return fmt.Errorf("-image needs -out dist: the Dockerfile copies from dist/")
	}
	// The empty directory the image's /data volume starts from, owned by the image's user
	// through COPY --chown (git keeps no empty directories, so it is made here).
	data := filepath.Join(out, "image", "data")
	if err := os.RemoveAll(filepath.Dir(data)); err != nil {
		return err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	built := 0
	for _, t := range ts {
		if t.goos != "linux" {
			continue
		}
		tag := repo + ":" + version + "-" + t.goarch
		args := append(append([]string(nil), tool[1:]...), "build", "--platform", "linux/"+t.goarch,
			"--build-arg", "TARGETARCH="+t.goarch, "-t", tag, "-f", "Dockerfile", ".")
		cmd := exec.Command(tool[0], args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the image %s: %w", tag, err)
		}
		fmt.Println("image", tag)
		built++
	}
	if built == 0 {
		return errors.New("-image needs a linux target")
	}
	return nil
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}
