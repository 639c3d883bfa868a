// Package assets holds the files Miniapp Host embeds: JSON schemas, HTML, CSS
// and JavaScript of the host's own pages, the bridge script and the seed world.
// They are reachable as an fs.FS so that each package parses them once.
package assets

import "embed"

// FS is every embedded file, rooted at this folder.
//
//go:embed schemas authserver bridge host playground newapp
var FS embed.FS
