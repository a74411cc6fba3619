import Foundation
import NIOCore

/// lockdownd on device port 62078 (PROTOCOL.md §2).
struct LockdownService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    /// lockdownd drops an idle client after this long (the clients wait 30 s per reply).
    static let idleTimeout: TimeAmount = .seconds(120)

    /// What the `garble` fault sends: a length that promises more than comes, then not a plist.
    static let garbledReply: [UInt8] =
        [0, 0, 4, 0] + Array("<html><body>502 Bad Gateway</body></html>\r\n".utf8)

    func run() async throws {
        var sessionID: String?
        while true {
            let request = try await stream.readDictionary(timeout: Self.idleTimeout)
            if runtime.isStalled(at: .lockdown) {
                runtime.logger.info("stall fault: lockdownd not answering")
                await stallUntilClosed()
                return
            }
            if runtime.takeFault("dropNextLockdownConnection") {
                runtime.logger.info("dropNextLockdownConnection fault: closing this lockdownd connection")
                stream.close()
                return
            }
            if runtime.garbles(at: .lockdown) {
                runtime.logger.info("garble fault: lockdownd answering with a broken frame")
                try await stream.write(Self.garbledReply)
                await stallUntilClosed()
                return
            }
            let verb = request["Request"] as? String ?? ""
            // Every reply echoes the request verb; without it the client treats the reply as a
            // failure (PROTOCOL.md §2.2).
            var reply: [String: Any] = ["Request": verb]
            var startTLSAfterReply = false
            switch verb {
            case "QueryType":
                reply["Type"] = "com.apple.mobile.lockdown"
            case "GetValue":
                getValue(
                    request, session: sessionID != nil, health: await runtime.health,
                    wifiConnections: await runtime.wifiConnections, into: &reply)
            case "SetValue", "RemoveValue":
                if sessionID == nil {
                    reply["Error"] = "SessionInactive"
                } else if verb == "SetValue",
                    request["Domain"] as? String == "com.apple.mobile.wireless_lockdown",
                    request["Key"] as? String == "EnableWifiConnections"
                {
                    // What Finder's "Show this iPad when on Wi-Fi" sets, over USB.
                    guard let enabled = request["Value"] as? Bool else {
                        reply["Error"] = "InvalidValue"
                        break
                    }
                    await runtime.setWiFiConnections(enabled)
                    reply["Domain"] = "com.apple.mobile.wireless_lockdown"
                    reply["Key"] = "EnableWifiConnections"
                }
            case "Pair":
                await pair(request, into: &reply)
            case "ValidatePair":
                await validatePair(request, into: &reply)
            case "Unpair":
                if let record = request["PairRecord"] as? [String: Any],
                    let hostID = record["HostID"] as? String
                {
                    await runtime.forget(hostID: hostID)
                } else {
                    reply["Error"] = "InvalidPairRecord"
                }
            case "StartSession":
                guard let hostID = request["HostID"] as? String else {
                    reply["Error"] = "MissingHostID"
                    break
                }
                guard await runtime.isTrusted(hostID: hostID) else {
                    reply["Error"] = "InvalidHostID"
                    break
                }
                if sessionID != nil {
                    reply["Error"] = "SessionActive"
                    break
                }
                let newSession = UUID().uuidString.uppercased()
                sessionID = newSession
                await runtime.countSession()
                reply["SessionID"] = newSession
                reply["EnableSessionSSL"] = true
                startTLSAfterReply = true
            case "StopSession":
                if sessionID == nil { reply["Error"] = "SessionInactive" }
                sessionID = nil
            case "StartService":
                await startService(request, session: sessionID != nil, into: &reply)
            case "Goodbye":
                try await stream.writePropertyList(reply)
                return
            default:
                reply["Error"] = "UnknownRequest"
            }
            try await stream.writePropertyList(reply)
            if startTLSAfterReply {
                // The client sends its ClientHello right after reading this reply, on the same
                // socket; the write above has been flushed, so TLS goes in now (PROTOCOL.md §2.6).
                try await stream.startServerTLS(runtime.tlsContext())
            }
        }
    }

    private func stallUntilClosed() async {
        let deadline = ContinuousClock.now + .seconds(600)
        while !stream.isClosed && ContinuousClock.now < deadline {
            _ = try? await stream.read(upTo: 65_536, timeout: .seconds(5))
        }
    }

    // MARK: GetValue

    private func getValue(
        _ request: [String: Any], session: Bool, health: VirtualDeviceHealth, wifiConnections: Bool,
        into reply: inout [String: Any]
    ) {
        let domain = request["Domain"] as? String
        let key = request["Key"] as? String
        if let domain { reply["Domain"] = domain }
        if let key { reply["Key"] = key }
        let values: [String: Any]
        if let domain {
            guard let domainValues = domainValues(domain, health: health, wifiConnections: wifiConnections)
            else {
                reply["Error"] = "MissingValue"
                return
            }
            values = domainValues
        } else {
            values = rootValues(session: session)
        }
        if let key {
            if let value = values[key] {
                reply["Value"] = value
            } else if domain == nil && !session && rootValues(session: true)[key] != nil {
                reply["Error"] = "GetProhibited"
            } else {
                reply["Error"] = "MissingValue"
            }
        } else {
            reply["Value"] = values
        }
    }

    /// Keys a device gives without a session (enough for `idevice_id UDID` and pairing).
    private static let publicKeys: Set<String> = [
        "ActivationState", "BuildVersion", "CPUArchitecture", "ChipID", "DeviceClass", "DeviceColor",
        "DeviceName",
        "DevicePublicKey", "HardwareModel", "HardwarePlatform", "ProductName", "ProductType",
        "ProductVersion",
        "ProtocolVersion", "UniqueChipID", "UniqueDeviceID", "WiFiAddress", "PasswordProtected",
        "TelephonyCapability",
    ]

    private func rootValues(session: Bool) -> [String: Any] {
        let profile = runtime.profile
        let identity = runtime.identity
        let model = runtime.model
        var values: [String: Any] = [
            "ActivationState": "Activated",
            "BluetoothAddress": identity.bluetoothAddress,
            "BoardId": 2,
            "BuildVersion": profile.buildVersion,
            "CPUArchitecture": profile.cpuArchitecture,
            "ChipID": model?.chipID ?? 0,
            "DeviceClass": profile.deviceClass,
            "DeviceColor": "1",
            "DeviceName": profile.deviceName,
            "DevicePublicKey": Data(runtime.devicePublicKeyPEM.utf8),
            "FirmwareVersion": "iBoot-\(profile.majorVersion >= 15 ? "7459.140.15" : "2817.60.2")",
            "HardwareModel": profile.hardwareModel,
            "HardwarePlatform": model?.platform ?? "",
            "HostAttached": true,
            "ModelNumber": model?.modelNumber ?? "",
            "PasswordProtected": runtime.hasFault("passcodeLocked"),
            "ProductName": "iPhone OS",
            "ProductType": profile.productType,
            "ProductVersion": profile.productVersion,
            "ProductionSOC": true,
            "ProtocolVersion": "2",
            "RegionInfo": "LL/A",
            "SerialNumber": identity.serialNumber,
            "TelephonyCapability": model?.hasBaseband ?? false,
            // The device clock (`pymobiledevice3 lockdown date`, AFC timestamps).
            "TimeIntervalSince1970": EmulatorClock.now().timeIntervalSince1970,
            "TimeZone": "Europe/Berlin",
            "TimeZoneOffsetFromUTC": 3600.0,
            "TrustedHostAttached": true,
            "UniqueChipID": Int(identity.uniqueChipID),
            "UniqueDeviceID": identity.udid,
            "Uses24HourClock": true,
            "WiFiAddress": identity.wifiAddress,
        ]
        if model?.hasBaseband ?? false {
            values["BasebandVersion"] = "1.70.01"
            values["SIMStatus"] = "kCTSIMSupportSIMStatusNotInserted"
        }
        if !session {
            values = values.filter { Self.publicKeys.contains($0.key) }
        }
        return values
    }

    private func domainValues(_ domain: String, health: VirtualDeviceHealth, wifiConnections: Bool)
        -> [String: Any]?
    {
        switch domain {
        case "com.apple.disk_usage", "com.apple.disk_usage.factory":
            var storage = DeviceStorage(paths: runtime.paths, fileSystem: runtime.fileSystem)
            storage.available = health.dataAvailable
            return [
                "TotalDiskCapacity": storage.totalDiskCapacity, "TotalDataCapacity": storage.dataCapacity,
                "TotalDataAvailable": storage.dataAvailable, "AmountDataAvailable": storage.dataAvailable,
                "AmountDataReserved": 200_000_000, "TotalSystemCapacity": storage.systemCapacity,
                "TotalSystemAvailable": 1_000_000_000,
            ]
        case "com.apple.mobile.battery":
            return [
                "BatteryCurrentCapacity": health.batteryLevel, "BatteryIsCharging": health.charging,
                "ExternalChargeCapable": true, "ExternalConnected": health.externalConnected,
                "FullyCharged": health.batteryLevel >= 100,
            ]
        case "com.apple.international":
            return ["Language": "en", "Locale": "en_US", "SupportedLanguages": ["en", "de", "fr"]]
        case "com.apple.mobile.wireless_lockdown":
            return ["EnableWifiConnections": wifiConnections]
        case "com.apple.security.mac.amfi":
            // Developer Mode exists from iOS 16 (PROTOCOL.md §2.4, §11).
            return runtime.profile.majorVersion >= 16
                ? ["DeveloperModeStatus": !runtime.hasFault("developerModeOff")] : nil
        default:
            return nil
        }
    }

    // MARK: pairing

    private func pairingRefusal() -> String? {
        // A locked device refuses before showing the dialog (PROTOCOL.md §2.5).
        if runtime.hasFault("passcodeLocked") || runtime.hasFault("beforeFirstUnlock") {
            return "PasswordProtected"
        }
        if runtime.hasFault("pairingDialogPending") { return "PairingDialogResponsePending" }
        return nil
    }

    /// Pairing is for the host the device's user trusts (PROTOCOL.md §2.10). Over Wi-Fi a device
    /// never pairs (`PairingProhibitedOverThisConnection`: pairing needs the cable). Over USB a host it
    /// already trusts may pair again; another host gets the "Trust this computer?" dialog, which the
    /// twin's user answers "Don't Trust" (`UserDeniedPairing`) unless the profile pairs on first
    /// contact (`hostPairs`) or the user was told to trust the next host (`acceptNextPairing`).
    private func pair(_ request: [String: Any], into reply: inout [String: Any]) async {
        if stream.overNetwork {
            runtime.logger.info("refused a Pair request over the network")
            reply["Error"] = "PairingProhibitedOverThisConnection"
            return
        }
        guard let record = request["PairRecord"] as? [String: Any], let hostID = record["HostID"] as? String
        else {
            reply["Error"] = "InvalidPairRecord"
            return
        }
        if let refusal = pairingRefusal() {
            reply["Error"] = refusal
            return
        }
        // The host builds the DeviceCertificate from our DevicePublicKey and sends its own
        // certificates with it; anything else is not a pairing with this device.
        guard let data = record["DeviceCertificate"] as? Data, let pem = String(data: data, encoding: .utf8),
            PairingCertificateFactory.certificate(pem, carries: runtime.deviceKey.publicKey),
            record["HostCertificate"] is Data, record["RootCertificate"] is Data
        else {
            reply["Error"] = "InvalidPairRecord"
            return
        }
        guard await runtime.mayPair(hostID: hostID) else {
            runtime.logger.info("the user did not trust host \(hostID): pairing denied")
            reply["Error"] = "UserDeniedPairing"
            return
        }
        await runtime.trust(hostID: hostID, systemBUID: record["SystemBUID"] as? String)
        reply["EscrowBag"] = await runtime.escrowBag
    }

    private func validatePair(_ request: [String: Any], into reply: inout [String: Any]) async {
        guard let record = request["PairRecord"] as? [String: Any], let hostID = record["HostID"] as? String
        else {
            reply["Error"] = "InvalidPairRecord"
            return
        }
        if runtime.hasFault("passcodeLocked") || runtime.hasFault("beforeFirstUnlock") {
            reply["Error"] = "PasswordProtected"
        } else if !(await runtime.isTrusted(hostID: hostID)) {
            reply["Error"] = "InvalidHostID"
        }
    }

    // MARK: services

    private func startService(_ request: [String: Any], session: Bool, into reply: inout [String: Any]) async
    {
        let name = request["Service"] as? String ?? ""
        reply["Service"] = name
        guard session else {
            reply["Error"] = "SessionInactive"
            return
        }
        let major = runtime.profile.majorVersion
        guard let kind = ServiceKind.named(name, major: major) else {
            reply["Error"] = "InvalidService"
            return
        }
        // Before the first unlock after a restart, nothing that reaches the user's data starts.
        if runtime.hasFault("beforeFirstUnlock"), kind != .heartbeat {
            reply["Error"] = "EscrowLocked"
            return
        }
        if kind.isDeveloperService {
            // Developer services exist only with the Developer disk image mounted, and iOS 17+
            // moved them behind RemoteXPC, out of reach of lockdown (PROTOCOL.md §6.2, §11).
            // With Developer Mode off (iOS 16+) they are refused as if there were no image.
            let mounted = await runtime.isDeveloperImageMounted
            guard mounted, major < 17, !(major >= 16 && runtime.hasFault("developerModeOff")) else {
                reply["Error"] = "InvalidService"
                return
            }
        }
        let port: UInt16
        if let network = runtime.network {
            port = await network.openService(kind, runtime: runtime)
        } else {
            port = await runtime.openService(kind)
        }
        reply["Port"] = Int(port)
        if kind.usesTLS { reply["EnableServiceSSL"] = true }
        runtime.logger.debug("service \(name) on port \(port)")
    }
}
