import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import Testing

@Suite struct SpecValidationTests {
    func problems(_ yaml: String, file: String = "devices.yaml") -> [String] {
        do {
            _ = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: file)
            return []
        } catch let error as SpecValidationError {
            return error.problems.map(\.description)
        } catch {
            return ["unexpected \(error)"]
        }
    }

    @Test func theMinimalFixtureIsValid() throws {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: SpecFixtures.minimal, file: "devices.yaml")
        #expect(matrix.devices.map(\.id) == ["a", "b"])
        #expect(
            matrix.devices[0].kiosk == nil, "no kiosk: -HAKioskMode is not sent, the device keeps its own")
        #expect(matrix.devices[0].verificationTimeout == 30)
    }

    /// `watchdog:` is a mapping of `after` and `per_hour`, both whole numbers in range, defaults 3.
    @Test func aWatchdogIsAfterAndPerHourInRangeAtTheirLine() throws {
        let watched = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    watchdog: {after: 2}")
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: watched, file: "devices.yaml")
        #expect(matrix.devices[0].watchdog == Watchdog(after: 2, perHour: 3))
        #expect(matrix.devices[1].watchdog == nil)
        let wrong = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb",
            with: "  a:\n    transport: usb\n    watchdog: {after: 0, per_hour: 100, every: 5}")
        let found = problems(wrong)
        #expect(found.count == 3, "\(found)")
        #expect(
            found.contains {
                $0.hasPrefix("devices.yaml:12:23:") && $0.contains("device 'a' watchdog.after")
            },
            "\(found)")
        #expect(found.contains { $0.contains("watchdog.per_hour") }, "\(found)")
        #expect(found.contains { $0.contains("every") }, "\(found)")
        let scalar = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    watchdog: true")
        #expect(problems(scalar).first?.contains("watchdog must be a mapping") == true, "\(problems(scalar))")
    }

    @Test func networkIsAUSBLookupAndPlacedWhenElsewhere() throws {
        let wifi = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    network: true")
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: wifi, file: "devices.yaml")
        #expect(matrix.devices.map(\.network) == [true, false])

        // An iOS 17+ device on Wi-Fi: devicectl on a Mac, pymobiledevice3 through usbmuxd on Linux.
        let modern = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: devicectl\n    network: true")
        #expect(!problems(modern).contains { $0.contains("network: true") }, "\(problems(modern))")
        let ssh = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb",
            with: "  a:\n    transport: ssh\n    host: ipad.local\n    network: true")
        #expect(
            problems(ssh).contains(
                "devices.yaml:13:14: error: device 'a' network: true reaches a device through usbmuxd's "
                    + "network lookup (Wi-Fi sync), which only transports devicectl and usb use; transport is 'ssh'"
            ),
            "\(problems(ssh))")
        let notBool = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    network: wifi")
        #expect(
            problems(notBool) == [
                "devices.yaml:12:14: error: device 'a' network must be true or false, not 'wifi'"
            ])
    }

    /// `address:` is where a Wi-Fi device is: it means `network: true`, a `${VAR}` is allowed, and it
    /// contradicts `network: false` — said at its line and column.
    @Test func anAddressMakesAWiFiDeviceAndContradictsNetworkFalse() throws {
        let wifi = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    address: ${MINI4_IP}")
        let device = try SpecLoader(transports: Backends.vocabulary).load(yaml: wifi, file: "devices.yaml")
            .devices[0]
        #expect(device.network)
        #expect(device.address?.resolve(["MINI4_IP": "192.168.1.40"]).value == "192.168.1.40")

        let both = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb",
            with: "  a:\n    transport: usb\n    network: false\n    address: 192.168.1.40")
        #expect(
            problems(both) == [
                "devices.yaml:13:14: error: device 'a' address: is where a Wi-Fi device is found, and network: "
                    + "false says it is not reached over Wi-Fi: remove one"
            ], "\(problems(both))")
        let path = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    transport: usb\n    address: http://ipad/")
        #expect(
            problems(path) == [
                "devices.yaml:12:14: error: device 'a' address 'http://ipad/' is not a host name or IP address "
                    + "(e.g. 192.168.1.40, ipad.local)"
            ], "\(problems(path))")
    }

    /// A device id names its twin's state folder (which a --virtual run empties), its screenshot and
    /// its crash-report folder: `../../x` once made a run delete a folder outside the state folder.
    @Test(arguments: [
        ("\"../../x\"", "'../../x' must start with a letter or a digit"),
        ("a/b", "'a/b' may only contain letters, digits, '-', '_' and '.' (it names files and folders)"),
        ("\".\"", "'.' must start with a letter or a digit"),
        ("\"..\"", "'..' must start with a letter or a digit"),
        ("\"\"", "the device name is empty"),
        ("-rf", "'-rf' must start with a letter or a digit"),
        ("\"tab\\there\"", "may only contain letters, digits"),
        (String(repeating: "k", count: 65), "is longer than 64 characters"),
    ])
    func aDeviceKeyThatIsNoPlainNameIsRefusedAtItsPlace(key: String, says: String) {
        let yaml = SpecFixtures.minimal.replacingOccurrences(of: "  a:\n", with: "  \(key):\n")
        let found = problems(yaml)
        #expect(
            found.contains {
                $0.hasPrefix("devices.yaml:10:3: error: the device name ") && $0.contains(says)
            },
            "\(found)")
    }

    @Test func aFlavourNameIsAFolderNameToo() {
        let yaml = SpecFixtures.minimal.replacingOccurrences(of: "modern", with: "../modern")
        let found = problems(yaml)
        #expect(
            found.contains(
                "devices.yaml:3:3: error: the flavour name '../modern' must start with a letter or a digit"),
            "\(found)")
    }

    @Test func plainNamesStayValid() throws {
        let yaml = SpecFixtures.minimal.replacingOccurrences(of: "  a:\n", with: "  iPad_2.kitchen-1:\n")
        #expect(
            try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml").devices
                .first?.id == "iPad_2.kitchen-1")
    }

    /// `app_settings:` values take the type the app reads the key with (HAAppDelegate.m): the theme a
    /// number, the gradient a boolean, any other key text — and a value the app could not read as its
    /// type is refused at its place instead of reaching the device.
    @Test func appSettingsAreTypedAsTheAppReadsThem() throws {
        let settings = """
              a:
                transport: usb
                app_settings: {HAThemeMode: 2, HAGradientEnabled: on, HADevStreamMode: 2, MyKey: true,
                  HAShowUnsupportedCardsEnabled: no}

            """
        let yaml = SpecFixtures.minimal.replacingOccurrences(of: "  a:\n    transport: usb\n", with: settings)
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        #expect(
            matrix.devices[0].appSettings == [
                "HAThemeMode": .integer(2), "HAGradientEnabled": .bool(true), "HADevStreamMode": .string("2"),
                "MyKey": .string("YES"), "HAShowUnsupportedCardsEnabled": .bool(false),
            ])
        let dark = yaml.replacingOccurrences(of: "HAThemeMode: 2", with: "HAThemeMode: dark")
        let found = problems(dark)
        #expect(
            found.count == 1
                && found[0].hasSuffix(
                    "error: device 'a' app_settings.HAThemeMode is read by the app as a whole number, not 'dark'"
                ),
            "\(found)")
        // 1.3's switch for placeholder cards is a boolean: "hide" would reach the app as text.
        let hide = yaml.replacingOccurrences(
            of: "HAShowUnsupportedCardsEnabled: no", with: "HAShowUnsupportedCardsEnabled: hide")
        #expect(
            problems(hide).contains {
                $0.hasSuffix(
                    "app_settings.HAShowUnsupportedCardsEnabled is read by the app as YES or NO, not 'hide'")
            }, "\(problems(hide))")
    }

    /// `model:` finds a devicectl device without a UDID (the app's ipadpro); elsewhere it is refused.
    @Test func aModelIsForDevicectlDevices() throws {
        let usb = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb\n", with: "  a:\n    transport: usb\n    model: iPad Pro\n")
        #expect(
            problems(usb).contains {
                $0.contains("device 'a' model: finds a device by the model devicectl lists")
                    && $0.hasSuffix("transport is 'usb'")
            }, "\(problems(usb))")
        let devicectl = usb.replacingOccurrences(
            of: "  a:\n    transport: usb\n    model: iPad Pro\n    ios: \"15.8\"",
            with: "  a:\n    transport: devicectl\n    model: iPad Pro\n    ios: \"26.0\"")
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: devicectl, file: "devices.yaml")
        #expect(matrix.devices.first?.model == "iPad Pro")
    }

    @Test func anUnknownKeyIsPlacedAndGetsASuggestion() {
        let yaml = SpecFixtures.minimal.replacingOccurrences(
            of: "  a:\n    transport: usb", with: "  a:\n    trasport: usb")
        let found = problems(yaml)
        #expect(
            found.contains(
                "devices.yaml:11:5: error: device 'a': unknown key 'trasport' (did you mean 'transport'?)"))
        #expect(found.contains("devices.yaml:10:3: error: device 'a' needs `transport:` (e.g. usb)"))
        #expect(found.count == 2)
    }

    @Test func everyProblemIsReportedTogetherWithItsPlace() throws {
        let yaml = """
            version: 1
            defaults:
              kiosk: maybe
            flavours:
              modern:
                archs: [arm64]
                deployment_target: "15.0"
                sdk: iphoneos
            devices:
              old:
                transport: usb
                ios: "9.3.5"
                arch: armv7
                flavour: modern
              typo:
                transport: usb
                ios: "15.8"
                arch: arm64
                flavour: moden
              plan:
                transport: usb
                ios: "15.8"
                arch: arm64
                flavour: modern
              one:
                aliases: [tablet, all]
                transport: usb
                ios: "15.8"
                arch: arm64
                flavour: modern
              two:
                aliases: [Tablet]
                transport: usbb
                ios: "15.8"
                arch: arm64
                flavour: modern
                verification_timeout: -3
            groups:
              mine: [one, twoo]

            """
        let error = #expect(throws: SpecValidationError.self) {
            try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "conf/devices.yaml")
        }
        let found = try #require(error?.problems.map(\.description))
        let expected = [
            "conf/devices.yaml:3:10: error: defaults.kiosk must be true or false, not 'maybe'",
            "conf/devices.yaml:10:3: error: device 'old' is armv7 but flavour 'modern' builds arm64; "
                + "armv7 needs a legacy flavour (Xcode 13.x, archs [armv7, arm64])",
            "conf/devices.yaml:15:3: error: device 'typo' uses flavour 'moden', which is not defined "
                + "(did you mean 'modern'?)",
            "conf/devices.yaml:20:3: error: device 'plan': 'plan' is a hadeploy command word and cannot name a device",
            "conf/devices.yaml:25:3: error: device 'one': 'all' is a hadeploy command word and cannot name a device",
            "conf/devices.yaml:31:3: error: device 'two': name 'Tablet' is already used by device 'one'",
            "conf/devices.yaml:33:16: error: device 'two' transport 'usbb' is not one of ssh, devicectl, usb, "
                + "simctl, rosettasim, mac (did you mean 'usb'?)",
            "conf/devices.yaml:37:27: error: device 'two' verification_timeout must be a positive number of "
                + "seconds, not '-3'",
            "conf/devices.yaml:39:15: error: group 'mine' lists 'twoo', which is not a device (did you mean 'two'?)",
        ]
        for line in expected {
            #expect(found.contains(line), "\(line)\nfound:\n\(found.joined(separator: "\n"))")
        }
        #expect(found.count == expected.count, "\(found.joined(separator: "\n"))")
        #expect(error?.exitStatus == .config)
        // The message lists them in file order under one heading.
        let description = try #require(error?.description)
        #expect(description.hasPrefix("conf/devices.yaml is not valid (\(expected.count) problems):\n"))
        #expect(description.split(separator: "\n").dropFirst().map(String.init) == expected)
    }

    @Test func buildHostMustBeAnSSHAddress() {
        #expect(
            problems("build_host: mac-mini\n" + SpecFixtures.minimal) == [
                "devices.yaml:1:13: error: build_host must be ssh://[user@]host[:port][/work/directory] (a Mac "
                    + "with Xcode), not 'mac-mini'"
            ])
        #expect(problems("build_host: ssh://ci@mac-mini:2222/Users/ci/builds\n" + SpecFixtures.minimal) == [])
        #expect(problems("build_host: ${BUILD_HOST}\n" + SpecFixtures.minimal) == [])
        #expect(problems("build_host: ssh://mac:99999\n" + SpecFixtures.minimal).count == 1)
    }

    @Test func armv7NeedsTheLegacyFlavour() {
        let yaml = SpecFixtures.minimal.replacingOccurrences(
            of: "    arch: armv7\n    flavour: legacy", with: "    arch: armv7\n    flavour: modern")
        #expect(
            problems(yaml) == [
                "devices.yaml:15:3: error: device 'b' is armv7 but flavour 'modern' builds arm64; use flavour 'legacy'"
            ])
    }

    /// The Mac runs only the Mac Catalyst build, and only the Mac runs it; a Mac needs no `ios:`
    /// and its flavour no deployment target (the project's own is used, as the app's script does).
    @Test func theMacAndTheMacCatalystFlavourGoTogether() {
        let valid = """
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0"}
              mac: {archs: [arm64], sdk: maccatalyst, configuration: Debug}
            devices:
              mac: {transport: mac, arch: arm64, flavour: mac}
              mini4: {transport: usb, ios: "15.8", arch: arm64, flavour: modern}
            """
        #expect(problems(valid) == [])
        let swapped = valid.replacingOccurrences(
            of: "arch: arm64, flavour: mac}", with: "arch: arm64, flavour: MODERN}"
        )
        .replacingOccurrences(of: "arch: arm64, flavour: modern}", with: "arch: arm64, flavour: mac}")
        .replacingOccurrences(of: "MODERN", with: "modern")
        #expect(
            problems(swapped) == [
                "devices.yaml:5:3: error: device 'mac' is this Mac (transport mac) but flavour 'modern' builds for "
                    + "iphoneos; use a flavour with `sdk: maccatalyst`",
                "devices.yaml:6:3: error: device 'mini4' uses flavour 'mac', which builds the Mac Catalyst app; "
                    + "only a `transport: mac` device runs it",
            ])
        #expect(
            problems(valid.replacingOccurrences(of: "sdk: maccatalyst", with: "sdk: macosx")) == [
                "devices.yaml:3:3: error: flavour 'mac' needs `deployment_target:` (e.g. \"15.0\")",
                "devices.yaml:3:30: error: flavour 'mac' sdk 'macosx' is not iphoneos, iphonesimulator or maccatalyst",
                "devices.yaml:5:3: error: device 'mac' is this Mac (transport mac) but flavour 'mac' builds for "
                    + "macosx; use a flavour with `sdk: maccatalyst`",
            ])
    }

    @Test func aFlavourBuildingArmv7MustTargetOldIOS() {
        let yaml = SpecFixtures.minimal.replacingOccurrences(of: "\"9.0\"", with: "\"12.0\"")
        #expect(
            problems(yaml) == [
                "devices.yaml:6:3: error: flavour 'legacy' builds armv7 but targets iOS 12.0; armv7 needs a "
                    + "deployment target below 11 (and Xcode 13.x)"
            ])
    }

    @Test func aFlavourMayDelegateToTheAppsBuildScriptButNotToNothing() throws {
        let yaml = SpecFixtures.minimal.replacingOccurrences(
            of: "    deployment_target: \"9.0\"\n",
            with: "    deployment_target: \"9.0\"\n    script: scripts/build.sh device\n")
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        #expect(matrix.flavour(named: "legacy")?.script == "scripts/build.sh device")
        #expect(matrix.flavour(named: "modern")?.script == nil)
        let empty = SpecFixtures.minimal.replacingOccurrences(
            of: "    deployment_target: \"9.0\"\n", with: "    deployment_target: \"9.0\"\n    script: \"\"\n"
        )
        #expect(
            problems(empty) == [
                "devices.yaml:9:13: error: flavour 'legacy' script is empty; name the app's build command "
                    + "(e.g. scripts/build.sh device) or remove `script:` to build with xcodebuild"
            ])
    }

    @Test func aliasesMayNotCollideWithOtherDevicesOrGroups() {
        let yaml =
            SpecFixtures.minimal.replacingOccurrences(
                of: "  b:\n", with: "  b:\n    aliases: [\"A\", mine]\n")
            + "groups:\n  mine: [a]\n  deploy: [b]\n"
        #expect(
            problems(yaml).sorted() == [
                "devices.yaml:15:3: error: device 'b': name 'A' is already used by device 'a'",
                "devices.yaml:22:3: error: group 'mine' has the name of a device or command",
                "devices.yaml:23:3: error: group 'deploy' has the name of a device or command",
            ])
    }

    @Test func groupNamesCollideAsTypedTargetsDo() {
        let yaml =
            SpecFixtures.minimal.replacingOccurrences(
                of: "  b:\n", with: "  b:\n    aliases: [\"old one\"]\n")
            + "groups:\n  A: [b]\n  Old  One: [a]\n  Help: [a]\n"
        #expect(
            problems(yaml) == [
                "devices.yaml:22:3: error: group 'A' has the name of a device or command",
                "devices.yaml:23:3: error: group 'Old  One' has the name of a device or command",
                "devices.yaml:24:3: error: group 'Help' has the name of a device or command",
            ])
    }

    @Test func aDeviceDefinedTwiceIsPlaced() {
        let yaml =
            SpecFixtures.minimal
            + "  a:\n    transport: usb\n    ios: \"15.8\"\n    arch: arm64\n    flavour: modern\n"
        let found = problems(yaml)
        #expect(found.count == 1)
        let message = found.first ?? ""
        #expect(message.contains("'a'"), "\(message)")
        #expect(!message.contains("flavours:"), "the whole file is not dumped into the message: \(message)")
        #expect(
            message.hasPrefix("devices.yaml:10:3: ") || message.hasPrefix("devices.yaml:20:3: "), "\(message)"
        )
    }

    @Test(arguments: [
        (
            "version: 1\ndevices:\n  a:\n    kiosk: yes: no\n",
            "devices.yaml:4:15: error: YAML syntax error: mapping values are not allowed in this context"
        ),
        (
            "version: 1\ndevices:\n\ta: 1\n",
            "devices.yaml:3:1: error: YAML syntax error: found character that cannot start any token"
        ),
        (
            "devices:\n  a:\n    name: \"unterminated\n",
            "devices.yaml:4:1: error: YAML syntax error: found unexpected end of stream"
        ),
    ])
    func brokenYAMLIsPlaced(yaml: String, expected: String) {
        let found = problems(yaml)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix(expected) == true, "\(found)")
    }

    @Test func aControlCharacterIsPlaced() {
        let found = problems("version: 1\ndevices:\n  a:\n    name: iPad\u{7}\n")
        #expect(found == ["devices.yaml:4:15: error: YAML error: control characters are not allowed"])
    }

    @Test func emptyAndMissingFiles() throws {
        #expect(
            problems("") == [
                "devices.yaml:1:1: error: the file is empty; it needs at least `flavours:` and `devices:`"
            ])
        #expect(
            problems("version: 1\n") == [
                "devices.yaml:1:1: error: missing `flavours:` (legacy, modern, simulator, ...)",
                "devices.yaml:1:1: error: missing `devices:`",
            ])
        let error = #expect(throws: SpecValidationError.self) {
            try SpecLoader(transports: Backends.vocabulary).load(
                contentsOf: URL(fileURLWithPath: "/nonexistent/devices.yaml"), displayName: "x.yaml")
        }
        #expect(error?.description.contains("x.yaml:1:1: error: file not found; pass --config PATH") == true)
    }
}
