import Foundation
import Testing
import WorkoutFormats

/// Garmin product numbers named from the FIT profile (the number stays in `ImportProduct`).
@Suite("Garmin product names")
struct GarminProductTests {
    @Test func profileNamesBecomeTheNamesPeopleUse() {
        // Numbers and profile names as Garmin's FIT SDK (profile 21.218) lists them.
        #expect(GarminProduct.profileName(1765) == "fr920xt")
        #expect(GarminProduct.displayName(1765) == "Forerunner 920XT")
        #expect(GarminProduct.displayName(1036) == "Edge 500")
        #expect(GarminProduct.displayName(2697) == "fenix 5")
        #expect(GarminProduct.displayName(3992) == "Forerunner 255")
        #expect(GarminProduct.displayName(65000) == nil)
    }

    @Test func storedNamesOfEarlierImportsAreResolved() {
        #expect(GarminProduct.resolvingNumber(in: "Garmin product 1765") == "Garmin Forerunner 920XT")
        #expect(GarminProduct.resolvingNumber(in: "Garmin product 65000") == "Garmin product 65000")
        #expect(GarminProduct.resolvingNumber(in: "Wahoo ELEMNT") == "Wahoo ELEMNT")
    }

    @Test func anImportNamesTheDeviceAndKeepsTheNumber() throws {
        let plan = try FITImportPlan(bytes: try SharedData.bytes("al2_920xt-lap-swim"))
        #expect(plan.metadata[ImportMetadataKey.device] == .string("Garmin Forerunner 920XT"))
        #expect(plan.metadata[ImportMetadataKey.product] == .int(1765))
    }
}
