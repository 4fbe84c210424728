// Package report renders a benchmark directory into one self-contained,
// offline report.html (leaderboard, model × metric heatmap, demographic view,
// cost, run settings and a transcript viewer) and prints the terminal summary
// behind `impactbench status`.
//
// Everything a model or a simulated user wrote is untrusted. The page keeps
// all data out of markup: summary data sits in JSON islands
// (<script type="application/json">) encoded with HTML escaping, transcripts
// sit in gzip+base64 chunks, and the page's own script renders both with
// textContent/createElement only. A Content-Security-Policy meta tag allows
// only the page's own scripts (by hash) and no network loads at all.
//
// Transcripts are the bulk of a run (≈12 KB per conversation), so they are
// stored compressed in chunks of ChunkConversations and decompressed in the
// browser (DecompressionStream) only when a conversation is opened or a
// full-text search runs; the list itself is paginated.
package report
