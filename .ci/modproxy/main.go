// Command modproxy writes a file-system module proxy (GOPROXY=file://DIR)
// of this repository's modules at a made-up release version, so that
// .ci/install-check can run `go install .../cmd/lockcheck@VERSION` the
// way a user would, with no workspace and no replace directive.
//
// Usage:
//
//	modproxy pin -version V DIR...       in each DIR/go.mod, require every
//	                                      github.com/lockplugin/lockplugin
//	                                      module at V and drop their replaces
//	                                      (what a release does)
//	modproxy publish -version V -out PROXY DIR...
//	                                      add DIR's module at V to PROXY:
//	                                      @v/list, V.info, V.mod, V.zip
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// ours is the path prefix of the repository's modules.
const ours = "github.com/lockplugin/lockplugin"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: modproxy pin|publish -version V [-out PROXY] DIR...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("modproxy "+os.Args[1], flag.ExitOnError)
	version := fs.String("version", "", "the release version, e.g. v0.0.1-installcheck")
	out := fs.String("out", "", "publish: the proxy directory")
	_ = fs.Parse(os.Args[2:])
	if !semver.IsValid(*version) || semver.Canonical(*version) != *version {
		fail(fmt.Errorf("-version %q is not a canonical semantic version", *version))
	}
	for _, dir := range fs.Args() {
		var err error
		switch os.Args[1] {
		case "pin":
			err = pin(dir, *version)
		case "publish":
			if *out == "" {
				err = errors.New("publish needs -out")
			} else {
				err = publish(dir, *version, *out)
			}
		default:
			err = fmt.Errorf("unknown command %q (want pin or publish)", os.Args[1])
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", dir, err))
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}

func isOurs(path string) bool { return path == ours || strings.HasPrefix(path, ours+"/") }

// pin rewrites dir/go.mod as a release would: every module of ours is
// required at version and none is replaced.
func pin(dir, version string) error {
	name := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if isOurs(r.Mod.Path) {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	for _, r := range slices.Clone(f.Replace) {
		if isOurs(r.Old.Path) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	f.Cleanup()
	data, err = f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

// publish adds dir's module at version to the proxy in out.
func publish(dir, version, out string) error {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(data)
	if path == "" {
		return errors.New("go.mod names no module")
	}
	m := module.Version{Path: path, Version: version}
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(z, m, dir); err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), data, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{version, time.Now().UTC().Format(time.RFC3339)})
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return err
	}
	list, _ := os.ReadFile(filepath.Join(vdir, "list"))
	versions := strings.Fields(string(list))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(filepath.Join(vdir, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
