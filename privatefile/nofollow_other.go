//go:build !unix

package privatefile

// noFollow is 0 where open has no O_NOFOLLOW: O_EXCL alone already
// refuses an existing name, a link included.
const noFollow = 0
