package store

// SpareCount is how many spare files a directory keeps ready.
const SpareCount = spareCount

// SpareInodes are the inodes of the spares f keeps ready in runs/.
func SpareInodes(f *File) []uint64 {
	f.runs.mu.Lock()
	defer f.runs.mu.Unlock()
	var out []uint64
	for _, sp := range f.runs.ready {
		if fi, err := sp.Stat(); err == nil {
			out = append(out, inode(fi))
		}
	}
	return out
}
