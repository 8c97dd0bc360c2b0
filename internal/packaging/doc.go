// Package packaging holds the tests of the Debian package that
// scripts/package.sh builds with nfpm (build/linux/nfpm.yaml): what it holds,
// that its .desktop files validate, and that it installs and runs.
package packaging
