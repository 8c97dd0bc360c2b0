package store

// SpareCount is how many spare files a directory keeps ready.
const SpareCount = spareCount
