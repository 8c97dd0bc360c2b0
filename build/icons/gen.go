// Command icons draws the app's icon and writes every file the platforms
// ask for: the scalable SVG, the Linux hicolor PNGs, the macOS .icns, the
// Windows .ico, Wails's build/appicon.png and a monochrome tray variant.
// The mark is a hub with six spokes, each ending in a node: one endpoint
// reaching many tools. The same geometry yields the SVG and the PNGs (each
// pixel's coverage comes from the shapes' signed distances, 4×4 samples a
// pixel), so the files agree and the output is the same on every run.
//
//	go run ./build/icons        # from the repository's root: rewrites build/…
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("out", "build", "the build directory to write into")
	flag.Parse()
	if err := generate(*out); err != nil {
		slog.Error("generating icons", "err", err)
		os.Exit(1)
	}
}

// Sizes each platform asks for.
var (
	hicolorSizes = []int{16, 22, 24, 32, 48, 64, 128, 256, 512}
	trayPNGSizes = []int{16, 22, 24, 32, 48, 64}
	icoSizes     = []int{16, 24, 32, 48, 64, 128, 256}
	// icnsTypes are the PNG-carrying .icns entries: type → pixel size
	// (ic11…ic14 and ic10 are the @2x ones).
	icnsTypes = []struct {
		typ  string
		size int
	}{
		{"icp4", 16}, {"icp5", 32}, {"icp6", 64}, {"ic07", 128}, {"ic08", 256}, {"ic09", 512},
		{"ic11", 32}, {"ic12", 64}, {"ic13", 256}, {"ic14", 512}, {"ic10", 1024},
	}
)

// glyph is the mark's geometry in a unit square (0..1, y down).
type glyph struct {
	background  bool    // the rounded square behind the mark
	hub         float64 // the hub's radius
	spokeLen    float64 // from the centre to a node's centre
	spokeRadius float64 // half a spoke's width
	node        float64 // a node's radius
}

var (
	appGlyph  = glyph{background: true, hub: 0.135, spokeLen: 0.3, spokeRadius: 0.03, node: 0.072}
	trayGlyph = glyph{hub: 0.17, spokeLen: 0.375, spokeRadius: 0.05, node: 0.11}
)

const (
	bgInset  = 1.0 / 16 // transparent margin around the rounded square
	bgRadius = 0.19
)

var (
	bgTop    = color.NRGBA{0x45, 0x7f, 0xbd, 0xff}
	bgBottom = color.NRGBA{0x26, 0x4b, 0x78, 0xff}
	white    = color.NRGBA{0xff, 0xff, 0xff, 0xff}
	amber    = color.NRGBA{0xff, 0xc1, 0x4d, 0xff}
	black    = color.NRGBA{0, 0, 0, 0xff}
)

type point struct{ x, y float64 }

// nodes are the spokes' ends: six, the first straight up.
func (g glyph) nodes() []point {
	ps := make([]point, 6)
	for i := range ps {
		a := -math.Pi/2 + float64(i)*math.Pi/3
		ps[i] = point{0.5 + g.spokeLen*math.Cos(a), 0.5 + g.spokeLen*math.Sin(a)}
	}
	return ps
}

// layer is one colour's shape: its signed distance (negative inside) and
// its colour at a point.
type layer struct {
	dist  func(p point) float64
	paint func(p point) color.NRGBA
}

func solid(c color.NRGBA) func(point) color.NRGBA { return func(point) color.NRGBA { return c } }

func (g glyph) layers(mono bool) []layer {
	ns := g.nodes()
	spokes := func(p point) float64 {
		d := math.Inf(1)
		for _, n := range ns {
			d = math.Min(d, segmentDist(p, point{0.5, 0.5}, n)-g.spokeRadius)
		}
		return math.Min(d, math.Hypot(p.x-0.5, p.y-0.5)-g.hub)
	}
	nodes := func(p point) float64 {
		d := math.Inf(1)
		for _, n := range ns {
			d = math.Min(d, math.Hypot(p.x-n.x, p.y-n.y)-g.node)
		}
		return d
	}
	if mono {
		return []layer{{func(p point) float64 { return math.Min(spokes(p), nodes(p)) }, solid(black)}}
	}
	var ls []layer
	if g.background {
		ls = append(ls, layer{
			dist: func(p point) float64 { return roundedSquareDist(p, 0.5-bgInset, bgRadius) },
			paint: func(p point) color.NRGBA {
				t := math.Max(0, math.Min(1, (p.y-bgInset)/(1-2*bgInset)))
				return mix(bgTop, bgBottom, t)
			},
		})
	}
	return append(ls, layer{spokes, solid(white)}, layer{nodes, solid(amber)})
}

func segmentDist(p, a, b point) float64 {
	abx, aby := b.x-a.x, b.y-a.y
	t := ((p.x-a.x)*abx + (p.y-a.y)*aby) / (abx*abx + aby*aby)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(p.x-(a.x+t*abx), p.y-(a.y+t*aby))
}

// roundedSquareDist is the distance to a square centred in the unit square
// with half-side h and corner radius r.
func roundedSquareDist(p point, h, r float64) float64 {
	qx, qy := math.Abs(p.x-0.5)-(h-r), math.Abs(p.y-0.5)-(h-r)
	return math.Hypot(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - r
}

func mix(a, b color.NRGBA, t float64) color.NRGBA {
	f := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + (float64(y)-float64(x))*t)) }
	return color.NRGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), f(a.A, b.A)}
}

// render draws the glyph at size×size pixels: each pixel averages ss×ss
// samples (4×4 for the small sizes, where edges cross most pixels), each
// sample's coverage taken from the distance to the edge.
func render(g glyph, mono bool, size int) *image.NRGBA {
	ss := 1
	switch {
	case size <= 32:
		ss = 4
	case size <= 128:
		ss = 2
	}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	ls := g.layers(mono)
	px := 1 / float64(size*ss) // one sample's width in unit space
	for y := range size {
		for x := range size {
			var r, gr, b, a float64 // premultiplied, 0..1
			for sy := range ss {
				for sx := range ss {
					p := point{(float64(x*ss+sx) + 0.5) * px, (float64(y*ss+sy) + 0.5) * px}
					var cr, cg, cb, ca float64
					for _, l := range ls {
						cov := math.Max(0, math.Min(1, 0.5-l.dist(p)/px))
						if cov == 0 {
							continue
						}
						c := l.paint(p)
						al := cov * float64(c.A) / 255
						cr = float64(c.R)/255*al + cr*(1-al)
						cg = float64(c.G)/255*al + cg*(1-al)
						cb = float64(c.B)/255*al + cb*(1-al)
						ca = al + ca*(1-al)
					}
					r, gr, b, a = r+cr, gr+cg, b+cb, a+ca
				}
			}
			n := float64(ss * ss)
			r, gr, b, a = r/n, gr/n, b/n, a/n
			if a == 0 {
				continue
			}
			img.SetNRGBA(x, y, color.NRGBA{
				R: uint8(math.Round(r / a * 255)), G: uint8(math.Round(gr / a * 255)),
				B: uint8(math.Round(b / a * 255)), A: uint8(math.Round(a * 255)),
			})
		}
	}
	return img
}

func encodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encoding png: %w", err)
	}
	return b.Bytes(), nil
}

// svg writes the glyph as SVG in a 512-unit view box.
func svg(g glyph, mono bool) []byte {
	const u = 512.0
	f := func(v float64) string {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v*u), "0"), ".")
	}
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">` + "\n")
	fg, accent := "#ffffff", hex(amber)
	if mono {
		fg, accent = "#000000", "#000000"
	}
	if g.background && !mono {
		fmt.Fprintf(&b, `  <defs><linearGradient id="bg" x1="0" y1="%s" x2="0" y2="%s" gradientUnits="userSpaceOnUse">`+
			`<stop offset="0" stop-color="%s"/><stop offset="1" stop-color="%s"/></linearGradient></defs>`+"\n",
			f(bgInset), f(1-bgInset), hex(bgTop), hex(bgBottom))
		fmt.Fprintf(&b, `  <rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="url(#bg)"/>`+"\n",
			f(bgInset), f(bgInset), f(1-2*bgInset), f(1-2*bgInset), f(bgRadius))
	}
	fmt.Fprintf(&b, `  <g stroke="%s" stroke-width="%s" stroke-linecap="round">`+"\n", fg, f(2*g.spokeRadius))
	for _, n := range g.nodes() {
		fmt.Fprintf(&b, `    <line x1="256" y1="256" x2="%s" y2="%s"/>`+"\n", f(n.x), f(n.y))
	}
	b.WriteString("  </g>\n")
	fmt.Fprintf(&b, `  <circle cx="256" cy="256" r="%s" fill="%s"/>`+"\n", f(g.hub), fg)
	fmt.Fprintf(&b, `  <g fill="%s">`+"\n", accent)
	for _, n := range g.nodes() {
		fmt.Fprintf(&b, `    <circle cx="%s" cy="%s" r="%s"/>`+"\n", f(n.x), f(n.y), f(g.node))
	}
	b.WriteString("  </g>\n</svg>\n")
	return []byte(b.String())
}

func hex(c color.NRGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// ico packs PNG images into a Windows .ico (PNG entries: Windows Vista on).
func ico(pngs [][]byte, sizes []int) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	_ = binary.Write(&b, le, [3]uint16{0, 1, uint16(len(pngs))})
	offset := 6 + 16*len(pngs)
	for i, p := range pngs {
		dim := uint8(sizes[i] % 256) // 256 is written as 0
		_ = binary.Write(&b, le, struct {
			W, H, Colors, Reserved uint8
			Planes, Bits           uint16
			Size, Offset           uint32
		}{dim, dim, 0, 0, 1, 32, uint32(len(p)), uint32(offset)})
		offset += len(p)
	}
	for _, p := range pngs {
		b.Write(p)
	}
	return b.Bytes()
}

// icns packs PNG images into a macOS .icns, one entry per type.
func icns(entries map[string][]byte) []byte {
	var body bytes.Buffer
	for _, e := range icnsTypes {
		p := entries[e.typ]
		body.WriteString(e.typ)
		_ = binary.Write(&body, binary.BigEndian, uint32(8+len(p)))
		body.Write(p)
	}
	var b bytes.Buffer
	b.WriteString("icns")
	_ = binary.Write(&b, binary.BigEndian, uint32(8+body.Len()))
	b.Write(body.Bytes())
	return b.Bytes()
}

// generate writes every icon file under dir (the build directory).
func generate(dir string) error {
	files := map[string][]byte{}
	cache := map[int][]byte{}
	app := func(size int) ([]byte, error) {
		if p, ok := cache[size]; ok {
			return p, nil
		}
		p, err := encodePNG(render(appGlyph, false, size))
		cache[size] = p
		return p, err
	}
	files["icons/capabilities.svg"] = svg(appGlyph, false)
	files["icons/capabilities-tray.svg"] = svg(trayGlyph, true)
	files["linux/icons/hicolor/scalable/apps/capabilities.svg"] = files["icons/capabilities.svg"]
	files["linux/icons/hicolor/symbolic/apps/capabilities-symbolic.svg"] = files["icons/capabilities-tray.svg"]
	for _, s := range hicolorSizes {
		p, err := app(s)
		if err != nil {
			return err
		}
		files[fmt.Sprintf("linux/icons/hicolor/%dx%d/apps/capabilities.png", s, s)] = p
	}
	for _, s := range trayPNGSizes {
		p, err := encodePNG(render(trayGlyph, true, s))
		if err != nil {
			return err
		}
		files[fmt.Sprintf("icons/tray/capabilities-tray-%d.png", s)] = p
	}
	p, err := app(1024)
	if err != nil {
		return err
	}
	files["appicon.png"] = p
	var icoPNGs [][]byte
	for _, s := range icoSizes {
		p, err := app(s)
		if err != nil {
			return err
		}
		icoPNGs = append(icoPNGs, p)
	}
	files["windows/icon.ico"] = ico(icoPNGs, icoSizes)
	entries := map[string][]byte{}
	for _, e := range icnsTypes {
		p, err := app(e.size)
		if err != nil {
			return err
		}
		entries[e.typ] = p
	}
	files["darwin/icons.icns"] = icns(entries)
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing icons: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing icons: %w", err)
		}
	}
	return nil
}
