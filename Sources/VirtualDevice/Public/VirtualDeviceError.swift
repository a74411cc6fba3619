/// Why the emulator could not do what was asked.
public enum VirtualDeviceError: Error, CustomStringConvertible, Sendable {
    case invalidConfiguration(String)
    case stateUnusable(String, String)
    case bindFailed(String, String)
    case unknownDevice(String, [String])

    public var description: String {
        switch self {
        case .invalidConfiguration(let what):
            return
                "Virtual device configuration is invalid: \(what). Give every device a unique name and UDID."
        case .stateUnusable(let path, let reason):
            return "Virtual device state in \(path) is unusable (\(reason)). "
                + "Check permissions, or delete the directory to start fresh."
        case .bindFailed(let address, let reason):
            return "Could not listen at \(address): \(reason). Choose another socket path or port."
        case .unknownDevice(let udid, let known):
            return "No virtual device \(udid); known: \(known.joined(separator: ", "))."
        }
    }
}
