# One summary row per model from docs/results/compare/<model>.md (the per-model table written by
# `treedyn compare`): the real-time factor and, where there is a reference, the largest position
# deviation from it, for each formulation in the table's order.
function rtf(x) { return sprintf("%.0f×", x) }
function dev(x) { s = sprintf("%.2g m", x); sub(/e-0/, "e-", s); return s }
FNR == 1 { if (row != "") print row; model = FILENAME; sub(/.*\//, "", model); sub(/\.md$/, "", model);
           row = "| [" model "](compare/" model ".md) |" }
/^\| [a-z0-9-]+ \| / && $2 !~ /formulation/ {
  split($0, c, "|"); for (k in c) gsub(/^ +| +$/, "", c[k]);
  status = c[3]; cell = status
  if (status == "ok" || status ~ /^failed/) {
    cell = rtf(c[5]); d = c[9]; sub(/ .*/, "", d)
    if (d != "-" && d != "(reference)") cell = cell ", " dev(d)
    if (status ~ /^failed/) { f = status; sub(/failed at /, "", f); sub(/ s$/, "", f);
                              cell = cell ", **failed at " sprintf("%.2g", f) " s**" }
  }
  row = row " " cell " |"
}
END { if (row != "") print row }
