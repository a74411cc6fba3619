import Foundation

extension VirtualDeviceProfile {
    /// A profile for a known device model, optionally at a given iOS version ("15.8", or "18.x" for
    /// the newest known 18 release). Nil for an unknown model.
    public static func preset(productType: String, iOSVersion: String?) -> VirtualDeviceProfile? {
        guard let model = Self.models[productType] else { return nil }
        let version = resolve(version: iOSVersion, default: model.defaultVersion)
        return VirtualDeviceProfile(
            name: model.marketingName.replacingOccurrences(of: " ", with: "-").lowercased() + "-" + version,
            productType: productType, productVersion: version,
            buildVersion: Self.builds[version] ?? "",
            cpuArchitecture: model.architecture, deviceName: model.marketingName,
            deviceClass: productType.hasPrefix("iPhone") ? "iPhone" : "iPad",
            hardwareModel: model.hardwareModel, screenWidth: model.width, screenHeight: model.height)
    }

    /// The product types `preset` knows.
    public static var knownProductTypes: [String] { models.keys.sorted() }

    private static func resolve(version: String?, default fallback: String) -> String {
        guard let version, !version.isEmpty else { return fallback }
        guard version.hasSuffix(".x") else { return version }
        let major = String(version.dropLast(2))
        let candidates = builds.keys.filter { $0.split(separator: ".").first.map(String.init) == major }
        return candidates.max { $0.compare($1, options: .numeric) == .orderedAscending } ?? major + ".0"
    }

    struct Model {
        let marketingName: String
        let hardwareModel: String
        let architecture: String
        let chipID: Int
        let platform: String
        let width: Int
        let height: Int
        let defaultVersion: String
        let modelNumber: String
        let hasBaseband: Bool
    }

    static let models: [String: Model] = [
        "iPad2,1": Model(
            marketingName: "iPad 2", hardwareModel: "K93AP", architecture: "armv7", chipID: 0x8940,
            platform: "s5l8940x", width: 768, height: 1024, defaultVersion: "9.3.5", modelNumber: "MC769",
            hasBaseband: false),
        "iPad5,1": Model(
            marketingName: "iPad mini 4", hardwareModel: "J96AP", architecture: "arm64", chipID: 0x7000,
            platform: "t7000", width: 1536, height: 2048, defaultVersion: "15.8", modelNumber: "MK9N2",
            hasBaseband: false),
        "iPad11,1": Model(
            marketingName: "iPad mini (5th generation)", hardwareModel: "J210AP", architecture: "arm64",
            chipID: 0x8020, platform: "t8020", width: 1536, height: 2048, defaultVersion: "26.0",
            modelNumber: "MUQW2", hasBaseband: false),
        "iPad16,3": Model(
            marketingName: "iPad Pro 11-inch (M4)", hardwareModel: "J717AP", architecture: "arm64",
            chipID: 0x8132, platform: "t8132", width: 1668, height: 2420, defaultVersion: "26.0",
            modelNumber: "MVV83", hasBaseband: false),
        "iPhone17,2": Model(
            marketingName: "iPhone 16 Pro Max", hardwareModel: "D94AP", architecture: "arm64", chipID: 0x8140,
            platform: "t8140", width: 1320, height: 2868, defaultVersion: "18.6.2", modelNumber: "MYWW3",
            hasBaseband: true),
    ]

    /// Public build numbers of the releases the presets use.
    static let builds: [String: String] = [
        "9.3.5": "13G36",
        "15.7": "19H12", "15.8": "19H370", "15.8.3": "19H386",
        "18.0": "22A3354", "18.1": "22B83", "18.2": "22C152", "18.3": "22D63", "18.4": "22E240",
        "18.5": "22F76", "18.6": "22G86", "18.6.2": "22G100",
        "26.0": "23A341",
    ]
}
