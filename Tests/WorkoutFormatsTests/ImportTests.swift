import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore

/// Synthetic files for what the real ones do not have: heart rate in a chained file after the
/// activity, and heart rate after the end for the recovery.
@Suite("FIT import")
struct ImportTests {
    static let start: UInt32 = 1_000_000_000

    /// A 10-minute run (records with distance and speed, no heart rate) and its session.
    static func run(heartRate: (UInt32) -> UInt8? = { _ in nil }, recordsAfter: UInt32 = 0) -> [UInt8] {
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 7), .uint32(4, start)])
        writer.write(21, [.uint32(253, start), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
        for t in UInt32(0)...(600 + recordsAfter) {
            writer.write(
                20,
                [
                    .uint32(253, start + t), .scaled(5, t <= 600 ? Double(t) * 3 : 1800, scale: 100, size: 4),
                    .scaled(73, t <= 600 ? 3 : 0, scale: 1000, size: 4), .uint8(3, heartRate(t)),
                ])
        }
        writer.write(21, [.uint32(253, start + 600), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
        writer.write(
            18,
            [
                .uint32(253, start + 600), .uint32(2, start), .enumeration(5, 1),
                .scaled(7, 600, scale: 1000, size: 4), .scaled(8, 600, scale: 1000, size: 4),
            ])
        return writer.finish()
    }

    /// A swim strap's memory as its own FIT file: hr messages, 4 beats each, 150 bpm then 160 bpm.
    static func strap(from: UInt32, seconds: UInt32) -> [UInt8] {
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 7), .uint32(4, from)])
        // Event times in 1/1024 s: a beat every half second from event time 2048 (= FIT time `from`).
        var eventTime: UInt32 = 2048
        for message in 0..<(seconds / 2) {
            let bpm: UInt8 = message < seconds / 4 ? 150 : 160
            var fields: [FITWriter.Field?] = [FITWriter.Field(number: 6, baseType: 0x02, bytes: [bpm, bpm, bpm, bpm])]
            if message == 0 {
                fields += [.uint32(253, from), .uint16(0, 0)]
                fields.append(
                    FITWriter.Field(
                        number: 9, baseType: 0x86,
                        bytes: (0..<4).flatMap { beat in
                            withUnsafeBytes(of: (eventTime + UInt32(beat) * 512).littleEndian, Array.init)
                        }))
            } else {
                // Four 12-bit event times packed little-endian (the low 12 bits of each).
                var packed = [UInt8](repeating: 0, count: 6)
                for beat in 0..<4 {
                    let value = (eventTime + UInt32(beat) * 512) & 0xFFF
                    let bit = beat * 12
                    packed[bit / 8] |= UInt8(truncatingIfNeeded: value << UInt32(bit % 8))
                    packed[bit / 8 + 1] |= UInt8(truncatingIfNeeded: value >> UInt32(8 - bit % 8))
                }
                fields.append(FITWriter.Field(number: 10, baseType: 0x0D, bytes: packed))
            }
            writer.write(132, fields)
            eventTime += 2048
        }
        return writer.finish()
    }

    @Test func heartRateFromAChainedStrapFileIsMergedByTime() throws {
        let bytes = Self.run() + Self.strap(from: Self.start, seconds: 600)
        let decoded = try FITDecoder.decode(bytes)
        #expect(decoded.headers.count == 2)
        #expect(decoded.heartBeats.count == 1200)
        #expect(decoded.heartBeats.first?.time == Double(Self.start))
        #expect(abs((decoded.heartBeats.last?.time ?? 0) - (Double(Self.start) + 599.5)) < 1e-9)
        let plan = try FITImportPlan(bytes: bytes)
        let clock = ManualClock(plan.start)
        let session = try WorkoutSession(configuration: plan.configuration, clock: clock, options: plan.builderOptions)
        try plan.replay(into: session, clock: clock)
        let workout = try session.builder.finishWorkout()
        let heartRate = try #require(workout.statistics[.heartRate])
        // 150 bpm for the first 300 s, 160 bpm for the last 300 s: 155 time-weighted.
        #expect(abs((heartRate.average?.value ?? 0) - 155) < 0.01)
        #expect(heartRate.maximum?.value == 160 && heartRate.minimum?.value == 150)
        #expect(heartRate.sampleCount == 1200)
        #expect(abs((workout.statistics[.distanceWalkingRunning]?.sum?.value ?? 0) - 1800) < 0.01)
    }

    @Test func heartRateAfterTheEndFeedsTheRecovery() throws {
        // 170 bpm to the end, then falling 0.5 bpm a second: HRR1 = 30, two-minute drop = 60.
        let bytes = Self.run(heartRate: { t in UInt8(t <= 600 ? 170 : 170 - Int(t - 600) / 2) }, recordsAfter: 130)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-\(UUID()).fit").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let store = try temporaryStore()
        let result = try FileImport.run(path: path, into: store)
        let recovery = try #require(result.heartRateRecovery)
        #expect(abs((recovery.oneMinuteDrop ?? 0) - 30) <= 1)
        #expect(abs((recovery.twoMinuteDrop ?? 0) - 60) <= 1)
        let saved = try #require(try store.workout(id: result.workout.id))
        #expect(saved.metadata[MetadataKey.heartRateRecoveryOneMinute] != nil)
        #expect(result.workout.duration == 600)
        #expect(result.workout.statistics[.heartRate]?.maximum?.value == 170)
    }
}
