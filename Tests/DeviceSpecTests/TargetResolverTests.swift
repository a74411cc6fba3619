import DeviceSpec
import HADeployDrivers
import Testing

@Suite struct TargetResolverTests {
    func resolve(_ words: String...) throws -> [String] {
        try TargetResolver(matrix: CommittedMatrixTests.load()).resolve(words).map(\.id)
    }

    @Test func multiWordAliasesMatchLongestFirst() throws {
        #expect(try resolve("sim") == ["sim"])
        #expect(try resolve("sim", "iphone") == ["sim-iphone"])
        #expect(try resolve("sim iphone") == ["sim-iphone"], "one quoted argument")
        #expect(try resolve("SIM", "iPhone") == ["sim-iphone"])
        #expect(try resolve("sim", "ipad") == ["sim"])
        #expect(try resolve("iphone") == ["iphone"])
        #expect(try resolve("sim", "iphone", "iphone") == ["sim-iphone", "iphone"])
        #expect(try resolve("iphone", "sim") == ["iphone", "sim"])
    }

    /// Every target of the app's old scripts/deploy.sh names the same device here.
    @Test func theOldScriptsTargetsResolve() throws {
        for target in [
            "ipad2", "ipad2-usb", "ipad3", "ipad4", "ipad4-usb", "mini4", "mini5", "iphone", "sim-ios93",
            "sim-ios103", "mac",
        ] {
            #expect(try resolve(target) == [target])
        }
        #expect(try resolve("sim-iphone") == ["sim-iphone"])
    }

    @Test func allGroupsAndSeveralTargets() throws {
        // `all` is the app's script's fleet (1.3): no simulators, not the iPads 2 and 3.
        #expect(try resolve("all") == ["iphone", "mini5", "mini4", "ipad4", "ipadpro", "mac"])
        #expect(try resolve("ipads") == ["ipad2", "ipad3", "ipad4", "mini4", "mini5", "ipadpro"])
        #expect(try resolve("sims") == ["sim", "sim-iphone", "sim-ios93", "sim-ios103"])
        #expect(try resolve("mini4", "ipad2") == ["mini4", "ipad2"])
        #expect(
            try resolve("ipad2", "ipad2", "ipads") == [
                "ipad2", "ipad3", "ipad4", "mini4", "mini5", "ipadpro",
            ],
            "no duplicates")
        #expect(try resolve("sim-ipad") == ["sim"])
        #expect(try resolve("ipad-pro") == ["ipadpro"], "the script's other spelling")
    }

    @Test func anUnknownWordNamesTheClosestAndListsAll() throws {
        let error = #expect(throws: UnknownTargetError.self) { try resolve("mini4", "mini6") }
        #expect(error?.word == "mini6")
        #expect(error?.suggestion == "mini4")
        #expect(error?.exitStatus == .usage)
        let message = try #require(error?.description)
        #expect(message.hasPrefix("unknown target 'mini6' — did you mean 'mini4'?\nValid targets: "))
        for target in [
            "ipad2", "ipad2-usb", "mini4", "mini5", "iphone", "sim", "sim ipad", "sim iphone", "all", "ipads",
        ] {
            #expect(error?.validTargets.contains(target) == true, "\(target)")
        }

        let far = #expect(throws: UnknownTargetError.self) { try resolve("kitchen-wall-display") }
        #expect(far?.suggestion == nil)
        #expect(far?.description.hasPrefix("unknown target 'kitchen-wall-display'\nValid targets:") == true)
    }

    @Test func aGroupNamedAllReplacesEveryDevice() throws {
        let yaml = SpecFixtures.minimal + "groups:\n  all: [b]\n"
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        #expect(try TargetResolver(matrix: matrix).resolve(["all"]).map(\.id) == ["b"])
    }
}
