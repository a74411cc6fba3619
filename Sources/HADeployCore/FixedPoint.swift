/// Numbers with a fixed number of decimals, for the lines hadeploy prints while devices deploy
/// (`1.4s`, `20.5 MB`). `String(format:)` goes through Foundation's locale machinery (ICU on
/// Linux) on every call, and the reporters format on every event of every device: at 24 devices that
/// was about a tenth of hadeploy's CPU, under the reporter's lock. The same text, rounded to nearest.
public enum FixedPoint {
    /// `value` with `decimals` (0 to 6) digits after the point, as `String(format: "%.Nf")` writes it
    /// (ties aside: those round to even on the scaled value). Not finite or beyond 10^15: `String(value)`.
    public static func text(_ value: Double, decimals: Int) -> String {
        let places = max(0, min(6, decimals))
        var scale: Double = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded(.toNearestOrEven)
        guard value.isFinite, scaled < 1e15 else { return String(value) }
        let units = UInt64(scaled)
        let factor = UInt64(scale)
        var text = value < 0 && units != 0 ? "-" : ""
        text += String(units / factor)
        if places > 0 {
            let fraction = String(units % factor)
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return text
    }
}
