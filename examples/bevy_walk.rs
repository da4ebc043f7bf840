//! A Bevy game that walks a player east along a village road (`examples/scenes/walk.json`: 40
//! district entities over 20 chunks, terrain built off the tick) and prints what streams: the
//! chunks loaded and released, the terrain built, the district entities that appear and
//! disappear as Bevy entities. Headless (`MinimalPlugins`), one fixed step per frame, and it
//! exits by itself when the walk is over.
//!
//! `cargo run --example bevy_walk --features bevy`

use bevy::app::AppExit;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use world_streaming::bevy::prelude::*;

/// The walker.
#[derive(Component)]
struct Player;

/// Metres the player walks per fixed step.
const SPEED: f32 = 4.0;
/// Where the walk ends (the road's end, x = 640 m).
const END: f32 = 640.0;

fn main() {
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenes/walk.json");
    App::new()
        .add_plugins(MinimalPlugins)
        // One fixed step per frame, however fast the machine: the output is the same every run.
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .add_plugins(WorldStreamingPlugin::from_scene_file(scene))
        .add_systems(Startup, spawn_player)
        .add_systems(
            FixedUpdate,
            (
                walk.before(StreamingSystems::Anchors),
                report.after(StreamingSystems::Districts),
            ),
        )
        .run();
}

fn spawn_player(mut commands: Commands) {
    commands.spawn((
        Player,
        StreamingAnchor::new("walker"),
        Transform::from_xyz(0.0, 0.0, 16.0),
    ));
}

fn walk(mut player: Query<&mut Transform, With<Player>>, mut exit: MessageWriter<AppExit>) {
    for mut t in &mut player {
        t.translation.x += SPEED;
        if t.translation.x > END {
            exit.write(AppExit::Success);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    ws: NonSend<WorldStreaming>,
    mut loaded: MessageReader<ChunkLoaded>,
    mut unloaded: MessageReader<ChunkUnloaded>,
    mut built: MessageReader<TerrainBuilt>,
    appeared: Query<(Entity, &DistrictEntity, &Transform), Added<DistrictEntity>>,
    mut gone: RemovedComponents<DistrictEntity>,
    player: Query<&Transform, With<Player>>,
    mut names: Local<std::collections::BTreeMap<Entity, String>>,
) {
    let tick = ws.tick();
    let x = player.iter().next().map_or(0.0, |t| t.translation.x);
    let chunks = |list: Vec<IVec3>| {
        list.iter()
            .map(|c| format!("({},{})", c.x, c.z))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let l: Vec<IVec3> = loaded.read().map(|m| m.chunk).collect();
    let u: Vec<IVec3> = unloaded.read().map(|m| m.chunk).collect();
    let b: Vec<TerrainBuilt> = built.read().copied().collect();
    if !l.is_empty() {
        println!("tick {tick:3} x {x:5.0}  loaded    {}", chunks(l));
    }
    if !u.is_empty() {
        println!("tick {tick:3} x {x:5.0}  unloaded  {}", chunks(u));
    }
    for m in b {
        let data = ws.chunk(m.chunk).expect("a built chunk is readable");
        let (lo, hi) = (0..data.cells)
            .flat_map(|j| (0..data.cells).map(move |i| (i, j)))
            .map(|(i, j)| data.height(i, j))
            .fold((u16::MAX, 0), |(lo, hi), h| (lo.min(h), hi.max(h)));
        println!(
            "tick {tick:3} x {x:5.0}  terrain   ({},{}) heights {lo}..{hi} hash {:016x}",
            m.chunk.x, m.chunk.z, m.hash
        );
    }
    // The plugin's district commands are applied before this system (it runs after
    // `StreamingSystems::Districts`), so `Added` sees this step's entities.
    for e in gone.read() {
        if let Some(id) = names.remove(&e) {
            println!("tick {tick:3} x {x:5.0}  stored    {id}");
        }
    }
    let mut new: Vec<(Entity, &DistrictEntity, &Transform)> = appeared.iter().collect();
    new.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    for (e, d, t) in new {
        let data = d.data.as_ref().map_or(String::new(), |m| {
            format!(" {}", serde_json::Value::Object(m.clone()))
        });
        println!(
            "tick {tick:3} x {x:5.0}  appeared  {} at ({:.0}, {:.0}){data}",
            d.id, t.translation.x, t.translation.z
        );
        // Remembered to name it when it is despawned (its component is gone by then).
        names.insert(e, d.id.to_string());
    }
}
