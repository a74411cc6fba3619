import HADeployCore

/// Lists simulators with a simctl-compatible `list -j devices` command and picks the configured one.
struct SimulatorLocator: Sendable {
    var invoker: ToolInvoker
    var selector: SimulatorSelector

    func locate(list: ProcessCommand, timeout: Duration) async throws -> SimulatorDevice {
        let output = try await invoker.checked(list, step: "connect", timeout: timeout)
        let devices: [SimulatorDevice]
        do {
            devices = try SimctlListParser.parse(output.standardOutput)
        } catch {
            throw AppleDriverError(
                .unexpectedOutput, step: "connect", device: invoker.device, reason: "\(error)",
                fix: "run `\(list)` by hand to see what it prints")
        }
        switch selector.choose(from: devices) {
        case .found(let device):
            return device
        case .notFound(let reason, let fix):
            throw AppleDriverError(
                .unavailable, step: "connect", device: invoker.device, reason: reason, fix: fix)
        }
    }
}
