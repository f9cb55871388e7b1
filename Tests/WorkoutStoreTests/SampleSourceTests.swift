import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@Suite("Store: sample sources with empty and absent fields")
struct SampleSourceTests {
    // Sources with "" and nil fields were conflated at the store only; "" now means absent everywhere.
    @Test(arguments: Backend.available) func emptyAndNilSourceFieldsNameTheSameSource(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = SourceDevice(name: "Watch")
        let empty = SourceDevice(name: "Watch", identifier: "")
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        let samples = [
            QuantitySample(.heartRate, 120, at: t(1), source: plain),
            QuantitySample(.heartRate, 121, at: t(2), source: empty),
        ]
        try recording.builder.add(samples)
        try recording.session.end(at: t(3))
        let workout = try recording.finish()
        #expect(plain == empty)
        #expect(try store.samples(workout: workout.id).map(\.source) == samples.map(\.source))
        let decoded = try JSONDecoder().decode(SourceDevice.self, from: Data(#"{"name":"Watch","model":""}"#.utf8))
        #expect(decoded == plain)
    }
}
