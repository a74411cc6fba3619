/// The one table of default step deadlines; devices.yaml `timeouts:` overrides them per device and
/// the planner writes the result into each `PlanStep`. Drivers derive their own command limits from
/// the same values (`DriverDeadlines`).
public enum StepDeadlines {
    /// Seconds per step; `install` is sized to the app instead (`install`).
    public static let defaults: [String: Double] = [
        "connect": 30, "mount": 120, "subscribe": 20, "launch": 60, "crash_check": 30, "screenshot": 30,
        // A driver-internal step (stopping a simulator app before relaunching it).
        "terminate": 20,
    ]
    /// Stopping the app before it is started again (a driver-internal step, devices.yaml
    /// `timeouts.terminate`), in seconds.
    public static var terminate: Double { defaults[terminateKey] ?? 20 }
    public static let terminateKey = "terminate"
    /// A minute plus the upload at a pessimistic 4 MB/s (Wi-Fi, USB 2 under load).
    public static let install = StepDeadline.sizedToApp(base: 60, bytesPerSecond: 4_000_000)

    /// The deadline of `step` for a device with these overrides.
    public static func deadline(_ step: StepID, overrides: [String: Double]) -> StepDeadline {
        if let value = overrides[step.rawValue] { return .seconds(value) }
        if step == .install { return install }
        return .seconds(defaults[step.rawValue] ?? 60)
    }
}
