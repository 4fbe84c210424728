//go:build race

package hostile

// raceBuild: the race detector multiplies memory; peaks are not judged.
const raceBuild = true
