//! The registry's entity operations report errors that name the entity they were given.

use freyr_core::{ComponentError, NoSuchEntity};
use freyr_registry::Registry;

#[test]
fn registry_errors_name_the_entity() {
    let mut registry = Registry::with_workers(1);
    let kept = registry.spawn((1u8,));
    let gone = registry.spawn((2u8,));
    registry.despawn(gone).unwrap();
    let gone_text = format!("entity {gone} does not exist");

    assert_eq!(registry.despawn(gone), Err(NoSuchEntity(gone)));
    assert_eq!(registry.insert(gone, (3u16,)), Err(NoSuchEntity(gone)));
    for err in [
        registry.get::<u8>(gone).unwrap_err(),
        registry.get_mut::<u8>(gone).unwrap_err(),
        registry.remove::<(u8,)>(gone).map(|_| ()).unwrap_err(),
    ] {
        assert_eq!(err, ComponentError::NoSuchEntity(gone));
        assert!(err.to_string().starts_with(&gone_text), "{err}");
    }
    let missing = ComponentError::MissingComponent {
        entity: kept,
        component: "u16",
    };
    assert_eq!(registry.get::<u16>(kept), Err(missing));
    assert_eq!(registry.get_mut::<u16>(kept).map(|v| *v), Err(missing));
    assert_eq!(registry.remove::<(u16,)>(kept), Err(missing));
    assert_eq!(
        missing.to_string(),
        format!("entity {kept} has no component of type `u16`")
    );
}
