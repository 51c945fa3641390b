// Package lazyfs is a FUSE file system for power-loss tests, after LazyFS (the one Jepsen
// uses): it passes every operation through to a backing directory and remembers what an
// fsync has made durable, and Cut then makes it lose everything else, as a power cut loses
// what the disk had not been asked to keep.
//
// The model of durability:
//   - A file's content and size are durable as of its last fsync (fdatasync and msync
//     included, which reach a FUSE file system as fsync). A cut brings each file back to
//     them: the blocks written since go back to what they held, the size to what it was.
//   - Names (creates, renames, unlinks of regular files) are durable as of the last fsync
//     of anything, as on a file system with one journal (ext4, XFS), which commits every
//     change to names with any fsync. With Options.Strict, only an fsync of a directory
//     makes the names in it durable, which is all POSIX promises.
//   - Not modelled: directories (mkdir and rmdir are kept), attributes (modes, times), and
//     hard links, symbolic links, device nodes, O_TMPFILE and copy_file_range, which fail
//     with ENOTSUP. Renaming a directory that holds files fails with ENOTSUP too.
//
// Mount passes a directory through to a mount point; Cut makes every change fail with EIO
// from then on (the power is gone: nothing more reaches the disk, and nothing unsynced
// counts); Unmount then unmounts and, after a cut, rewrites the backing directory to its
// durable state, which the next Mount starts from. Unlinked files that a cut could bring
// back wait in a directory next to the backing one (its name with ".lazyfs-trash" added).
package lazyfs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options tune a mount; nil means the defaults.
type Options struct {
	// Strict makes names durable only through an fsync of their directory (see the
	// package documentation); by default any fsync makes every name durable.
	Strict bool
	// Debug logs every FUSE request.
	Debug bool
}

// FS is a mounted lazyfs.
type FS struct {
	m          *model
	server     *fuse.Server
	mountpoint string
}

// Available reports why FUSE cannot be mounted here, or nil: root mounts through
// /dev/fuse, which must open; any other user through fusermount3 (Debian's fuse3), which
// opens it as root.
func Available() error {
	if os.Geteuid() == 0 {
		f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("lazyfs: FUSE is not available: %w", err)
		}
		return f.Close()
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("lazyfs: FUSE is not available: %w", err)
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		if _, err2 := exec.LookPath("fusermount"); err2 != nil {
			return fmt.Errorf("lazyfs: FUSE is not available: %w", err)
		}
	}
	return nil
}

// Mount mounts at mountpoint a file system that passes through to backing, whose content is
// durable as it is now.
func Mount(backing, mountpoint string, o *Options) (*FS, error) {
	if o == nil {
		o = &Options{}
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	m, err := newModel(backing, filepath.Clean(backing)+".lazyfs-trash", o.Strict)
	if err != nil {
		return nil, err
	}
	ops, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, err
	}
	loop := ops.(*fs.LoopbackNode)
	root := &node{LoopbackNode: loop, m: m}
	loop.RootData.RootNode = root
	server, err := fs.Mount(mountpoint, root, &fs.Options{MountOptions: fuse.MountOptions{
		FsName: backing, Name: "lazyfs", DisableXAttrs: true, Debug: o.Debug,
	}})
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s: %w", mountpoint, err)
	}
	return &FS{m: m, server: server, mountpoint: mountpoint}, nil
}

// Cut cuts the power: from now on every change fails with EIO, and Unmount will drop every
// change that no fsync made durable.
func (f *FS) Cut() { f.Fail(errCut) }

// Fail is a disk that fails: from now on every change (write, fsync, create, truncate)
// fails with errno, EIO or ENOSPC say, and as after Cut, Unmount drops every change that no
// fsync made durable, since nothing unsynced on such a disk can be counted on.
func (f *FS) Fail(errno syscall.Errno) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.cut, f.m.failWith = true, errno
}

// Unmount unmounts the file system and, after a Cut, rewrites the backing directory to
// its durable state. Every file on the mount must be closed (the writers killed).
func (f *FS) Unmount() error {
	if err := f.server.Unmount(); err != nil {
		return fmt.Errorf("lazyfs: unmount %s: %w", f.mountpoint, err)
	}
	f.server.Wait()
	f.m.mu.Lock()
	cut := f.m.cut
	f.m.mu.Unlock()
	if !cut {
		// No power cut: the backing directory is as the mount left it, and the unlinked
		// files waiting in the trash for a cut that did not come are gone for good.
		return os.RemoveAll(f.m.trash)
	}
	if err := f.m.restore(); err != nil {
		return err
	}
	return os.Remove(f.m.trash)
}

// Stats returns what the file system counted; DroppedBytes and DroppedNames are set once
// Unmount has restored a cut.
func (f *FS) Stats() Stats {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.m.stats
}

// node is a file or directory of the mount: a loopback node whose changes go through the
// model.
type node struct {
	*fs.LoopbackNode
	m *model
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.FileFsyncdirer     = (*dir)(nil)
	_ fs.FileReaddirenter   = (*dir)(nil)
	_ fs.FileReleasedirer   = (*dir)(nil)
	_ fs.FileSeekdirer      = (*dir)(nil)
	_ fs.FileReader         = (*file)(nil)
	_ fs.FileWriter         = (*file)(nil)
	_ fs.FileFsyncer        = (*file)(nil)
	_ fs.FileSetattrer      = (*file)(nil)
	_ fs.FileAllocater      = (*file)(nil)
	_ fs.FileGetattrer      = (*file)(nil)
	_ fs.FileLseeker        = (*file)(nil)
	_ fs.FileFlusher        = (*file)(nil)
	_ fs.FileReleaser       = (*file)(nil)
)

func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), m: n.m}
}

// rel is the node's path relative to the backing directory ("." for its root).
func (n *node) rel() string { return filepath.Clean(n.Path(n.Root())) }

func (n *node) abs() string { return filepath.Join(n.m.backing, n.rel()) }

// lockLive locks the model for a change, unless the power is cut.
func (m *model) lockLive() syscall.Errno {
	m.mu.Lock()
	if m.cut {
		m.mu.Unlock()
		return m.failWith
	}
	return 0
}

// saveFrom saves the content of the file at path from off on, before a truncate.
func (m *model) saveFrom(path string, off int64) (uint64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Ino, m.save(st.Ino, fd, off, st.Size, true)
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.m.lockLive(); errno != 0 {
		return nil, nil, 0, errno
	}
	defer n.m.mu.Unlock()
	rel := filepath.Join(n.rel(), name)
	p := filepath.Join(n.m.backing, rel)
	if _, err := os.Lstat(p); err == nil && flags&syscall.O_TRUNC != 0 {
		if _, err := n.m.saveFrom(p, 0); err != nil {
			return nil, nil, 0, fs.ToErrno(err)
		}
	}
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, readable(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	f, errno := n.m.wrap(fh)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if old, ok := n.m.names[rel]; !ok || old != f.ino {
		n.m.names[rel] = f.ino
		n.m.inodes[f.ino] = &inode{}
		n.m.namesChanged = true
	}
	return ch, f, fl, 0
}

// readable turns write-only opens into read-write ones, as the model reads what a write
// replaces.
func readable(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	writes := flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
	if writes {
		if errno := n.m.lockLive(); errno != 0 {
			return nil, 0, errno
		}
		defer n.m.mu.Unlock()
		if flags&syscall.O_TRUNC != 0 {
			if _, err := n.m.saveFrom(n.abs(), 0); err != nil {
				return nil, 0, fs.ToErrno(err)
			}
		}
		flags = readable(flags)
	}
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	f, errno := n.m.wrap(fh)
	return f, fl, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if errno := n.m.lockLive(); errno != 0 {
		return errno
	}
	defer n.m.mu.Unlock()
	return fs.ToErrno(n.m.remove(filepath.Join(n.rel(), name)))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return syscall.ENOTSUP
	}
	if errno := n.m.lockLive(); errno != 0 {
		return errno
	}
	defer n.m.mu.Unlock()
	from, to := filepath.Join(n.rel(), name), filepath.Join(np.rel(), newName)
	ino, isFile := n.m.names[from]
	if !isFile {
		for p := range n.m.names {
			if filepath.Dir(p) == from || len(p) > len(from) && p[:len(from)+1] == from+"/" {
				return syscall.ENOTSUP // a directory holding files
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(n.m.backing, to)); err == nil {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return syscall.EEXIST
		}
		if _, ok := n.m.names[to]; ok && isFile {
			if err := n.m.remove(to); err != nil {
				return fs.ToErrno(err)
			}
		}
	}
	if err := os.Rename(filepath.Join(n.m.backing, from), filepath.Join(n.m.backing, to)); err != nil {
		return fs.ToErrno(err)
	}
	if isFile {
		delete(n.m.names, from)
		n.m.names[to] = ino
		n.m.namesChanged = true
	}
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if f, ok := fh.(*file); ok {
		return f.Setattr(ctx, in, out)
	}
	if errno := n.m.lockLive(); errno != 0 {
		return errno
	}
	defer n.m.mu.Unlock()
	if size, ok := in.GetSize(); ok {
		if _, err := n.m.saveFrom(n.abs(), int64(size)); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.LoopbackNode.Setattr(ctx, nil, in, out)
}

func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if f, ok := fh.(*file); ok {
		return f.Fsync(ctx, flags)
	}
	if errno := n.m.lockLive(); errno != 0 {
		return errno
	}
	defer n.m.mu.Unlock()
	n.m.syncedDir(n.rel())
	return 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.m.lockLive(); errno != 0 {
		return nil, errno
	}
	defer n.m.mu.Unlock()
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if errno := n.m.lockLive(); errno != 0 {
		return errno
	}
	defer n.m.mu.Unlock()
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.ENOTSUP
}

func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dir{inner: fh, n: n}, fl, 0
}

// dir is an open directory: the loopback's, with its fsync going to the model.
type dir struct {
	inner fs.FileHandle
	n     *node
}

func (d *dir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dir) Releasedir(ctx context.Context, flags uint32) {
	d.inner.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.Fsync(ctx, nil, flags)
}

// file is an open regular file: the loopback's, with its changes going through the model.
type file struct {
	lf  *fs.LoopbackFile
	fd  int
	ino uint64
	m   *model
}

func (m *model) wrap(fh fs.FileHandle) (*file, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, _ := lf.PassthroughFd()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		lf.Release(context.Background())
		return nil, fs.ToErrno(err)
	}
	return &file{lf: lf, fd: fd, ino: st.Ino, m: m}, 0
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := unix.Pread(f.fd, buf, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.m.lockLive(); errno != 0 {
		return 0, errno
	}
	defer f.m.mu.Unlock()
	if err := f.m.save(f.ino, f.fd, off, off+int64(len(data)), false); err != nil {
		return 0, fs.ToErrno(err)
	}
	n, err := unix.Pwrite(f.fd, data, off)
	f.m.stats.Written += int64(max(n, 0))
	f.m.inode(f.ino).unsynced += int64(max(n, 0))
	return uint32(max(n, 0)), fs.ToErrno(err)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.m.lockLive(); errno != 0 {
		return errno
	}
	defer f.m.mu.Unlock()
	size, err := fileSize(f.fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	// The backing file need not reach its disk: durability is the model's.
	f.m.synced(f.ino, size)
	return 0
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := f.m.lockLive(); errno != 0 {
		return errno
	}
	defer f.m.mu.Unlock()
	if size, ok := in.GetSize(); ok {
		cur, err := fileSize(f.fd)
		if err != nil {
			return fs.ToErrno(err)
		}
		if err := f.m.save(f.ino, f.fd, int64(size), cur, true); err != nil {
			return fs.ToErrno(err)
		}
	}
	if errno := f.lf.Setattr(ctx, in, out); errno != 0 {
		return errno
	}
	return f.lf.Getattr(ctx, out)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if errno := f.m.lockLive(); errno != 0 {
		return errno
	}
	defer f.m.mu.Unlock()
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 { // punching, zeroing, collapsing, inserting
		cur, err := fileSize(f.fd)
		if err != nil {
			return fs.ToErrno(err)
		}
		end := int64(off + size)
		if mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0 {
			end = cur // everything after off moves
		}
		if err := f.m.save(f.ino, f.fd, int64(off), end, false); err != nil {
			return fs.ToErrno(err)
		}
	}
	return f.lf.Allocate(ctx, off, size, mode)
}

func (f *file) CopyFileRange(context.Context, uint64, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}

func (f *file) Flush(ctx context.Context) syscall.Errno { return f.lf.Flush(ctx) }

func (f *file) Release(ctx context.Context) syscall.Errno { return f.lf.Release(ctx) }
