/// Seconds from a configuration value or a measurement, converted without a trap: `Int64(Double)`
/// crashes on values out of range (`1e300`, infinity) and NaN, and a deadline of a thousand years is as
/// good as none. Every `Double` seconds value becomes a `Duration` or whole number through these.
extension Duration {
    /// The longest deadline hadeploy ever sets (a year): far above any configured timeout
    /// (devices.yaml accepts at most a week), far below where nanosecond arithmetic overflows.
    public static let longestDeadline: Duration = .seconds(366 * 24 * 3600)

    /// `seconds` as a duration; NaN and negative values are zero, huge values `longestDeadline`.
    public static func checkedSeconds(_ seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }
        let limit = Double(longestDeadline.components.seconds)
        guard seconds < limit else { return longestDeadline }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

extension FixedWidthInteger where Self: SignedInteger {
    /// `value` rounded toward zero and clamped to the type's range (`Int`, `Int64`…); NaN is 0.
    public init(clampingDouble value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Self.max) {
            self = .max
        } else if value <= Double(Self.min) {
            self = .min
        } else {
            self = Self(value)
        }
    }
}
