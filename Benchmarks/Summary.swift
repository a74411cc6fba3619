/// min / median / max of a sample, in the JSON shape `scripts/bench-ha.py` reads.
struct Summary: Codable {
    let n: Int
    let min: Double
    let median: Double
    let max: Double

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        n = sorted.count
        min = sorted.first ?? 0
        max = sorted.last ?? 0
        median =
            sorted.isEmpty
            ? 0
            : sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
