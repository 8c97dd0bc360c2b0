package index

import "math"

// coverage is the largest share of the query a candidate matched: the
// query's words weighed by their idf (rare words say more of what is
// wanted), a word matched by itself, a joined pair or a synonym. A word no
// tool has, nor its synonyms (a name, a value, or a word the tools say
// otherwise), weighs p.weakUnknown of the rarest possible word's idf.
// Relatives (WordNet) do not count: a result only they found is Related.
func (ix *Index) coverage(cs []cand, stems [8][]string, reached uint8) float32 {
	n := float64(len(ix.docs))
	idf := func(df int) float32 {
		return float32(math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)))
	}
	var w [8]float32
	var total float32
	for bit, ts := range stems {
		if len(ts) == 0 {
			continue
		}
		if reached&(1<<bit) == 0 {
			w[bit] = ix.p.weakUnknown * idf(0)
		} else {
			df := 0
			if id, ok := ix.terms[ts[0]]; ok {
				df = len(ix.post[id])
			}
			w[bit] = idf(df)
		}
		total += w[bit]
	}
	if total == 0 {
		return 1
	}
	var best float32
	for _, c := range cs {
		var got float32
		for bit := range 8 {
			if c.m&(1<<bit) != 0 {
				got += w[bit]
			}
		}
		best = max(best, got)
	}
	return best / total
}
