package schema

import "memprobe/internal/atomicfile"

// writeFile puts b at path so that a reader sees the old file or the whole
// new one, by the module's one atomic writer (atomicfile.Write, whose doc
// has the rules): a symbolic link is kept and the file it names replaced,
// a dangling one creates that file, a pipe or device is written through,
// a directory is refused; an error leaves path as it was.
func writeFile(path string, b []byte) error { return atomicfile.WriteBytes(path, b) }
