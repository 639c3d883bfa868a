#!/usr/bin/env python3
"""Plots the RSS CSV of a soak run (cmd/soak -rss-csv FILE) as an SVG.

    scripts/plot-soak-rss.py RSS.csv OUT.svg [TITLE]

The CSV has a row per process and sample: minute,time,pid,role,rss_mb, role being
host, web or network. The web processes alive in every sample are the launcher's
(the first started) and the consent view's (the second); the others are the
Miniapp views' processes, a new one per launch, drawn as dots. The dashed line is
1.3 times the launcher's size at minute 10, the soak's bound (BENCHMARKS.md, "Soak").
Standard library only.
"""
import csv
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    title = sys.argv[3] if len(sys.argv) > 3 else "RSS of every process over the soak"
    samples = sorted({r["minute"] for r in rows}, key=float)
    web_in = {}
    for r in rows:
        if r["role"] == "web":
            web_in.setdefault(int(r["pid"]), set()).add(r["minute"])
    steady = sorted(p for p, ms in web_in.items() if len(ms) >= 0.9 * len(samples))
    launcher = steady[0] if steady else None
    consent = steady[1] if len(steady) > 1 else None

    series = {}
    for r in rows:
        m, v, pid, role = float(r["minute"]), float(r["rss_mb"]), int(r["pid"]), r["role"]
        if role == "host":
            k = "host (miniapp-host)"
        elif pid == launcher:
            k = "launcher web process"
        elif pid == consent:
            k = "consent view web process"
        elif role == "web":
            k = "Miniapp view web process (new per launch)"
        else:
            k = "network process %d" % pid
        series.setdefault(k, []).append((m, v))

    xmax = max(10, int(float(samples[-1]) + 9) // 10 * 10)
    ymax = max(100, int(max(float(r["rss_mb"]) for r in rows) / 50 + 1) * 50)
    W, H, L, R, T, B = 980, 460, 60, 330, 30, 50

    def X(m):
        return L + (W - L - R) * m / xmax

    def Y(v):
        return H - B - (H - T - B) * v / ymax

    colors = {"host (miniapp-host)": "#1f77b4", "launcher web process": "#d62728",
              "consent view web process": "#2ca02c", "Miniapp view web process (new per launch)": "#ff7f0e"}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="%d" height="%d" fill="white"/>' % (W, H),
           '<text x="%d" y="18" font-size="14">%s</text>' % (L, title.replace("&", "&amp;").replace("<", "&lt;"))]
    for v in range(0, ymax + 1, 50):
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%d</text>'
                   % (L, Y(v), W - R, Y(v), L - 8, Y(v) + 4, v))
    for m in range(0, xmax + 1, 10):
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (X(m), T, X(m), H - B, X(m), H - B + 16, m))
    out.append('<text x="%d" y="%d" text-anchor="middle">minutes</text>' % ((L + W - R) / 2, H - 12))
    out.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">RSS (MB)</text>' % ((T + H - B) / 2, (T + H - B) / 2))
    legend = []
    launcher_pts = sorted(series.get("launcher web process", []))
    at10 = [v for m, v in launcher_pts if m >= 10]
    if at10:
        bound = 1.3 * at10[0]
        out.append('<line x1="%.1f" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="6 4"/>' % (X(10), Y(bound), W - R, Y(bound)))
        legend.append(("1.3 x the launcher's minute 10", "#d62728", True))
    network_shown = False
    for k, pts in sorted(series.items()):
        c = colors.get(k, "#7f7f7f")
        pts.sort()
        if k.startswith("Miniapp"):
            for m, v in pts:
                out.append('<circle cx="%.1f" cy="%.1f" r="1.6" fill="%s"/>' % (X(m), Y(v), c))
        else:
            d = " ".join("%.1f,%.1f" % (X(m), Y(v)) for m, v in pts)
            out.append('<polyline fill="none" stroke="%s" stroke-width="%d" points="%s"/>' % (c, 1 if k.startswith("network") else 2, d))
        if k.startswith("network"):
            if network_shown:
                continue
            network_shown = True
            k = "network processes (%d)" % sum(1 for s in series if s.startswith("network"))
        legend.append((k, c, False))
    for j, (k, c, dashed) in enumerate(legend):
        y = T + 20 + j * 18
        if dashed:
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-dasharray="6 4"/>' % (W - R + 12, y - 4, W - R + 24, y - 4, c))
        else:
            out.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>' % (W - R + 12, y - 9, c))
        out.append('<text x="%d" y="%d">%s</text>' % (W - R + 30, y, k.replace("&", "&amp;")))
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
