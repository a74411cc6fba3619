import DeviceSpec
import Foundation
import HADeployCore
import Testing

@testable import DeployModel
@testable import HADeployDrivers

/// One launch's settings reach the app in three forms — argv (USB, simctl, devicectl,
/// pymobiledevice3, the plan), the app's preferences plist (the jailbroken iPads, rosettasim,
/// devicectl's copy) and a `defaults import` domain (simctl, the Mac) — and the app must read the
/// same value from each, whichever device it runs on.
@Suite struct LaunchFormsTests {
    static let token = "FORMS-TOKEN-51c0"

    static func launch() throws -> ResolvedLaunch {
        try ResolvedLaunch(
            LaunchSettings(
                credentials: .homeAssistant(
                    server: .value("http://ha.local:8123"), token: SecretReference(environment: "HA_TOKEN")),
                dashboard: .named("2"), kiosk: true, autoRegister: true,
                appSettings: [
                    "HAThemeMode": .integer(2), "HAGradientEnabled": .bool(false),
                    "HADevStreamMode": .string("hls"),
                ],
                deployID: nil, deviceID: nil),
            environment: ["HA_TOKEN": token])
    }

    /// The value after `flag` in an argv, nil when the flag is not there.
    static func argument(_ flag: String, in argv: [String]) -> String? {
        argv.firstIndex(of: flag).flatMap { argv.indices.contains($0 + 1) ? argv[$0 + 1] : nil }
    }

    /// What the app finds in its preferences after a backend wrote `data`, typed (a boolean stays a
    /// boolean, an integer an integer).
    static func read(_ data: Data) throws -> [String: PropertyListValue] {
        let object = try PropertyListSerialization.propertyList(from: data, format: nil)
        guard case .dictionary(let values) = try PropertyListValue(object) else {
            Issue.record("not a dictionary: \(object)")
            return [:]
        }
        return values
    }

    @Test func kioskIsYESInArgvAndABooleanInThePreferencesAndTheDefaultsDomain() throws {
        let launch = try Self.launch()
        let argv = launch.arguments
        #expect(Self.argument("-HAKioskMode", in: argv) == "YES")
        #expect(Self.argument("-HAAutoRegister", in: argv) == "YES")
        #expect(Self.argument("-HAGradientEnabled", in: argv) == "NO")
        #expect(launch.preferences["HAKioskMode"] == .bool(true))
        #expect(launch.preferences["HAAutoRegister"] == .bool(true))
        #expect(launch.preferences["HAGradientEnabled"] == .bool(false))

        let plist = try Self.read(LaunchPreferences.plist(launch.preferences, mergedInto: nil))
        let exported = ProcessOutput(status: 1, standardOutput: Data(), standardError: Data("no domain".utf8))
        let domain = try Self.read(LaunchPreferences.defaultsDomain(launch.preferences, mergedInto: exported))
        #expect(plist == launch.preferences, "the preferences plist holds exactly the typed values")
        #expect(domain == launch.preferences, "the defaults domain holds the same values as the plist")
        #expect(plist["HAKioskMode"] == .bool(true))
    }

    @Test func aDashboardNamedTwoStaysANameAndTheThemeANumberInEveryForm() throws {
        let launch = try Self.launch()
        let argv = launch.arguments
        #expect(Self.argument("-HADashboard", in: argv) == "2")
        #expect(Self.argument("-HAThemeMode", in: argv) == "2")
        #expect(Self.argument("-HADevStreamMode", in: argv) == "hls")
        let plist = try Self.read(LaunchPreferences.plist(launch.preferences, mergedInto: nil))
        #expect(plist["HADashboard"] == .string("2"))
        #expect(plist["HAThemeMode"] == .integer(2))
        #expect(plist["HADevStreamMode"] == .string("hls"))
        #expect(plist["HAAccessToken"] == .string(Self.token))
    }

    /// An argv `-Key value` and the same key in the preferences are equivalent to the app: reading
    /// each argument's text with the app's own type for its key gives the value the plist holds.
    @Test func everyArgumentReadsAsThePreferenceValue() throws {
        let launch = try Self.launch()
        let pairs = stride(from: 0, to: launch.arguments.count, by: 2).map {
            (String(launch.arguments[$0].dropFirst()), launch.arguments[$0 + 1])
        }
        #expect(pairs.count == launch.preferences.count)
        for (key, text) in pairs {
            let read = try #require(LaunchValue(appKey: key, text: text), "\(key) \(text)")
            #expect(read.propertyListValue == launch.preferences[key], "\(key)")
        }
    }

    /// Secrets keep their own path: off the public argv, in the secret preferences only.
    @Test func theTokenIsOnlyInTheSecretPreferencesNeverInThePublicArguments() throws {
        let launch = try Self.launch()
        #expect(!launch.publicArguments.contains(Self.token))
        #expect(launch.secretPreferences == ["HAAccessToken": .string(Self.token)])
        #expect(launch.secretValues == [Self.token])
        #expect(!launch.description.contains(Self.token))
    }

    /// A plan file keeps app settings as argument text (its format is unchanged) and a worker reads
    /// them back with the same types; a value the app could not read is refused.
    @Test func aPlanFileKeepsTheAppSettingsTypes() throws {
        let settings = LaunchSettings(
            credentials: .keep, dashboard: .unchanged, kiosk: nil, autoRegister: false,
            appSettings: [
                "HAThemeMode": .integer(2), "HAGradientEnabled": .bool(true), "HADevStreamMode": .string("2"),
            ],
            deployID: nil, deviceID: nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(settings), as: UTF8.self)
        #expect(
            json.contains(
                #""appSettings":{"HADevStreamMode":"2","HAGradientEnabled":"YES","HAThemeMode":"2"}"#))
        #expect(try JSONDecoder().decode(LaunchSettings.self, from: Data(json.utf8)) == settings)
        let edited = json.replacingOccurrences(of: #""HAThemeMode":"2""#, with: #""HAThemeMode":"dark""#)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(LaunchSettings.self, from: Data(edited.utf8))
        }
    }
}
