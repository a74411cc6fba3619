import Foundation

/// The debugserver dialogue for launch-and-detach and for kill, on top of `GDBRemoteClient`.
/// LLDB's sequence: environment and working directory, `A` (argv), `qLaunchSuccess`, continue;
/// then interrupt and `D` so the app keeps running without a debugger (1.3.0's idevicedebug
/// cannot detach, PROTOCOL.md §7.3).
struct DebugServerLauncher {
    struct Launch {
        let processID: Int?
        let earlyStop: GDBStopReply?
        let output: String
    }

    let client: GDBRemoteClient
    let identity: DeviceIdentity
    let redactor: Redactor

    func launch(
        executablePath: String, workingDirectory: String?, arguments: [String], environment: [String: String],
        settle: Duration, deadline: ContinuousClock.Instant
    ) throws -> Launch {
        let name = (executablePath as NSString).lastPathComponent
        if let workingDirectory {
            // Optional for debugserver; an empty reply means "not supported" and is fine.
            let reply = try client.request(
                "QSetWorkingDir:" + GDBPacket.hexEncode(workingDirectory), step: "debugserver QSetWorkingDir",
                deadline: deadline)
            try expectOK(reply, step: "debugserver QSetWorkingDir", allowUnsupported: true)
        }
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) {
            let reply = try client.request(
                "QEnvironmentHexEncoded:" + GDBPacket.hexEncode("\(key)=\(value)"),
                step: "debugserver QEnvironmentHexEncoded \(key)", deadline: deadline)
            try expectOK(reply, step: "debugserver QEnvironmentHexEncoded \(key)", allowUnsupported: false)
        }
        let argv = [executablePath] + arguments
        let launchReply = try client.request(
            GDBPacket.launchArguments(argv), step: "debugserver A (launch \(name))", deadline: deadline)
        guard launchReply.hasPrefix("OK") else {
            throw launchError("debugserver A (launch \(name))", launchReply)
        }
        let success = try client.request(
            "qLaunchSuccess", step: "debugserver qLaunchSuccess", deadline: deadline)
        guard success.hasPrefix("OK") else { throw launchError("debugserver qLaunchSuccess", success) }
        let processID = try? processIdentifier(deadline: deadline)

        try client.sendPacket("c", step: "debugserver c (continue)", deadline: deadline, expectAck: false)
        var output = ""
        var earlyStop: GDBStopReply?
        let settleEnd = min(client.clock.deadline(after: settle), deadline)
        while earlyStop == nil,
            let packet = try client.readPacket(until: settleEnd, step: "debugserver c (continue)")
        {
            if let text = Self.consoleOutput(packet) {
                output += text
            } else if let stop = GDBStopReply(packet) {
                earlyStop = stop
            }
        }
        if let stop = earlyStop, case .stopped = stop {
            // A crash at launch: let it go, so the device writes its crash report.
            _ = try? client.request("D", step: "debugserver D (detach)", deadline: deadline, last: true)
        } else if earlyStop == nil {
            try client.interrupt()
            var stopped = false
            while !stopped, let packet = try client.readPacket(until: deadline, step: "debugserver interrupt")
            {
                if let text = Self.consoleOutput(packet) { output += text }
                if let stop = GDBStopReply(packet) {
                    stopped = true
                    if !stop.isBenignStop { earlyStop = stop }
                }
            }
            guard stopped else {
                throw MobileDeviceError(
                    .launchFailed, step: "debugserver interrupt", device: identity,
                    reason: "\(name) did not stop for the detach in time",
                    nextStep:
                        "The app may be running under the debugger; relaunch it, and replug the device if it hangs."
                )
            }
            let detach = try client.request(
                "D", step: "debugserver D (detach)", deadline: deadline, last: true)
            guard detach.hasPrefix("OK") || detach.isEmpty else {
                throw launchError("debugserver D (detach)", detach)
            }
        }
        return Launch(processID: processID, earlyStop: earlyStop, output: redactor.redact(output))
    }

    /// Kills a running instance by process name: attach, then `k`. Returns whether one was attached.
    func kill(processName: String, deadline: ContinuousClock.Instant) throws -> Bool {
        let reply = try client.request(
            "vAttachName;" + GDBPacket.hexEncode(processName), step: "debugserver vAttachName \(processName)",
            deadline: deadline)
        if reply.hasPrefix("E") { return false }  // not running
        // Attached (stop reply), or a debugserver without vAttachName (empty reply), where `k` ends
        // whatever app it launched last and is harmless otherwise.
        let killDeadline = min(deadline, client.clock.deadline(after: .seconds(5)))
        _ = try? client.request("k", step: "debugserver k", deadline: killDeadline, last: true)
        return GDBStopReply(reply) != nil || reply.isEmpty
    }

    /// Whether a process called `processName` runs, without attaching to it: lldb's
    /// `qfProcessInfo` with an exact name match lists it (`pid:…;name:…;`) or answers `E` for none.
    func isRunning(processName: String, deadline: ContinuousClock.Instant) throws -> Bool {
        let reply = try client.request(
            "qfProcessInfo:name:" + GDBPacket.hexEncode(processName) + ";name_match:equals;",
            step: "debugserver qfProcessInfo \(processName)", deadline: deadline, last: true)
        if reply.hasPrefix("E") { return false }
        guard reply.split(separator: ";").contains(where: { $0.hasPrefix("pid:") }) else {
            throw launchError("debugserver qfProcessInfo \(processName)", reply)
        }
        return true
    }

    private func processIdentifier(deadline: ContinuousClock.Instant) throws -> Int? {
        let reply = try client.request("qProcessInfo", step: "debugserver qProcessInfo", deadline: deadline)
        for field in reply.split(separator: ";") where field.hasPrefix("pid:") {
            return Int(field.dropFirst(4), radix: 16)
        }
        return nil
    }

    /// `O<hex>` carries program output (but a lone "OK" is a reply, not output).
    static func consoleOutput(_ packet: String) -> String? {
        guard packet.hasPrefix("O"), packet != "OK" else { return nil }
        return GDBPacket.hexDecode(String(packet.dropFirst()))
    }

    private func expectOK(_ reply: String, step: String, allowUnsupported: Bool) throws {
        if reply.hasPrefix("OK") || (allowUnsupported && reply.isEmpty) { return }
        throw launchError(step, reply)
    }

    private func launchError(_ step: String, _ reply: String) -> MobileDeviceError {
        var detail = reply.isEmpty ? "an empty reply (not supported)" : reply
        if reply.hasPrefix("E"), reply.count > 3 { detail = String(reply.dropFirst()) }
        let locked = detail.localizedCaseInsensitiveContains("locked")
        return MobileDeviceError(
            locked ? .passcodeLocked : .launchFailed, step: step, device: identity,
            reason: "debugserver answered \(redactor.redact(detail))",
            nextStep: locked
                ? "Then launch again."
                : "Check that the app is signed for development (get-task-allow) with a profile for this device, "
                    + "and that the device is unlocked.")
    }
}
