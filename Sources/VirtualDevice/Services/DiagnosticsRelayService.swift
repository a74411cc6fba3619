import Foundation

/// com.apple.mobile.diagnostics_relay (`idevicediagnostics`, `pymobiledevice3 diagnostics`): every
/// request is `{Request: …}`, every reply `{Status: "Success", Diagnostics: {…}}` or a failing
/// `Status`. Restart/Shutdown/Sleep are acknowledged only; the twin is rebooted through its control
/// socket, not by a client.
struct DiagnosticsRelayService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(120))
            switch request["Request"] as? String ?? "" {
            case "All":
                try await succeed([
                    "GasGauge": gasGauge, "HDMI": hdmi, "NAND": ["Status": "Success"], "WiFi": wifi,
                ])
            case "GasGauge":
                try await succeed(["GasGauge": gasGauge])
            case "WiFi":
                try await succeed(["WiFi": wifi])
            case "NAND":
                try await succeed(["NAND": ["Status": "Success"]])
            case "HDMI":
                try await succeed(["HDMI": hdmi])
            case "MobileGestalt":
                try await mobileGestalt(request["MobileGestaltKeys"] as? [String] ?? [])
            case "IORegistry":
                try await succeed(["IORegistry": ioRegistry(request, health: await runtime.health)])
            case "Restart", "Shutdown", "Sleep":
                try await stream.writePropertyList(["Status": "Success"])
            case "Goodbye":
                try await stream.writePropertyList(["Status": "Success"])
                return
            default:
                try await stream.writePropertyList(["Status": "UnknownRequest"])
            }
        }
    }

    private func succeed(_ diagnostics: [String: Any]) async throws {
        try await stream.writePropertyList(["Status": "Success", "Diagnostics": diagnostics])
    }

    private var gasGauge: [String: Any] {
        [
            "CycleCount": 212, "DesignCapacity": 5124, "FullChargeCapacity": 4870, "Status": "Success",
        ]
    }

    private var hdmi: [String: Any] { ["Connection": "Unknown", "Status": "Success"] }

    private var wifi: [String: Any] { ["Active": "true", "Status": "Success"] }

    /// The MobileGestalt keys the twin knows, from the same identity lockdown reports; iOS 17.4
    /// deprecated the query (answered with `MobileGestaltDeprecated`).
    private func mobileGestalt(_ keys: [String]) async throws {
        let profile = runtime.profile
        if profile.majorVersion > 17
            || profile.productVersion.compare("17.4", options: .numeric) != .orderedAscending
        {
            return try await succeed(["MobileGestalt": ["Status": "MobileGestaltDeprecated"]])
        }
        let known: [String: Any] = [
            "ProductType": profile.productType, "ProductVersion": profile.productVersion,
            "BuildVersion": profile.buildVersion, "HWModelStr": profile.hardwareModel,
            "UniqueDeviceID": runtime.udid, "SerialNumber": runtime.identity.serialNumber,
            "DeviceName": profile.deviceName, "DeviceClass": profile.deviceClass,
            "CPUArchitecture": profile.cpuArchitecture, "WifiAddress": runtime.identity.wifiAddress,
            "BluetoothAddress": runtime.identity.bluetoothAddress,
            "main-screen-width": profile.screenWidth, "main-screen-height": profile.screenHeight,
        ]
        var values: [String: Any] = ["Status": "Success"]
        for key in keys { if let value = known[key] { values[key] = value } }
        try await succeed(["MobileGestalt": values])
    }

    private func ioRegistry(_ request: [String: Any], health: VirtualDeviceHealth) -> [String: Any] {
        // The battery node is what clients ask for (`diagnostics battery`); others come back empty.
        let name = request["EntryName"] as? String ?? request["EntryClass"] as? String ?? ""
        guard name == "AppleARMPMUCharger" || name == "IOPMPowerSource" || name == "AppleSmartBattery" else {
            return [:]
        }
        return [
            "CurrentCapacity": health.batteryLevel, "MaxCapacity": 100, "IsCharging": health.charging,
            "ExternalConnected": health.externalConnected, "FullyCharged": health.batteryLevel >= 100,
            "CycleCount": 212, "DesignCapacity": 5124, "Temperature": 2950,
            "Voltage": 4350,
        ]
    }
}
