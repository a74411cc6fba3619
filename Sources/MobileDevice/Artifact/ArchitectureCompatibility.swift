/// Which executable slices a device's CPU can run.
public enum ArchitectureCompatibility {
    /// The slices `deviceArchitecture` (lockdown `CPUArchitecture`) runs on `iOSMajor`, best first.
    /// 32-bit apps stopped running with iOS 11, so an arm64 device on iOS ≥ 11 needs arm64.
    public static func runnableSlices(deviceArchitecture: String, iOSMajor: Int) -> [String] {
        let legacy32 = iOSMajor < 11 ? ["armv7s", "armv7", "armv6"] : []
        switch deviceArchitecture.lowercased() {
        case "arm64e": return ["arm64e", "arm64"] + legacy32
        case "arm64": return ["arm64"] + legacy32
        case "armv7s": return ["armv7s", "armv7", "armv6"]
        case "armv7", "armv7f", "armv7k": return ["armv7", "armv6"]
        case "armv6": return ["armv6"]
        default: return [deviceArchitecture]
        }
    }

    /// Whether any of `slices` runs on the device.
    public static func canRun(slices: [String], deviceArchitecture: String, iOSMajor: Int) -> Bool {
        let runnable = Set(runnableSlices(deviceArchitecture: deviceArchitecture, iOSMajor: iOSMajor))
        return slices.contains { runnable.contains($0) }
    }
}
