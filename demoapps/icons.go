package demoapps

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
)

// The demos' manifest icons (Web App Manifest "icons"): a vector one and a
// 64x64 PNG, served from the demo's own origin, so that a launcher shows
// what a real Miniapp's manifest gives it.
const (
	iconSVGPath = "/icon.svg"
	iconPNGPath = "/icon-64.png"
)

func manifestIcons() []map[string]string {
	return []map[string]string{
		{"src": iconSVGPath, "sizes": "any", "type": "image/svg+xml", "purpose": "any"},
		{"src": iconPNGPath, "sizes": "64x64", "type": "image/png"},
	}
}

// iconSVG draws letter in white on the demos' theme colour.
func iconSVG(letter string) []byte {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">`)
	b.WriteString(`<rect width="64" height="64" rx="14" fill="#1f5fd1"/>`)
	b.WriteString(`<text x="32" y="44" font-family="sans-serif" font-size="34" font-weight="700" fill="#fff" text-anchor="middle">`)
	b.WriteString(letter)
	b.WriteString(`</text></svg>`)
	return []byte(b.String())
}

// iconPNG draws a 64x64 PNG: a ring of the theme colour on white.
func iconPNG(fill color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			dx, dy := x-32, y-32
			r2 := dx*dx + dy*dy
			c := color.RGBA{255, 255, 255, 255}
			if r2 <= 30*30 && r2 >= 18*18 {
				c = fill
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // encoding into memory cannot fail
	return buf.Bytes()
}

// serveIcons adds the icon routes to mux.
func serveIcons(mux *http.ServeMux, letter string, fill color.RGBA) {
	svg, pngBody := iconSVG(letter), iconPNG(fill)
	// GET /icon.svg
	mux.HandleFunc("GET "+iconSVGPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(svg)
	})
	// GET /icon-64.png
	mux.HandleFunc("GET "+iconPNGPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBody)
	})
}
