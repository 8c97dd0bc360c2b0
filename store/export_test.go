package store

// SpareCount is how many spare files a directory keeps ready.
const SpareCount = spareCount

// SparesReady is how many spares f keeps ready in runs/ now.
func SparesReady(f *File) int {
	f.runs.mu.Lock()
	defer f.runs.mu.Unlock()
	return len(f.runs.ready)
}

// SpareUse is how many records and journals f's runs/ made of a spare, and
// how many it created itself.
func SpareUse(f *File) (named, missed int64) { return f.runs.named.Load(), f.runs.missed.Load() }

// Packed is how many records f wrote into shared files (PutFinal).
func Packed(f *File) int64 {
	f.pack.mu.Lock()
	defer f.pack.mu.Unlock()
	return f.pack.packed
}
