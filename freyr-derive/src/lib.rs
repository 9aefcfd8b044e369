//! `#[derive(StableHash)]` for Freyr's world hash.
//!
//! Use it through the facade, where the derive and the trait share one name (as serde's
//! `Serialize` does): `use freyr::StableHash;` brings both.
//!
//! The generated `stable_hash` feeds the value into the hasher field by field, in declaration
//! order, with each field's own `StableHash`; an enum first feeds its **variant index** (the
//! variant's position in the declaration, 0-based, as a `u32`) and then that variant's fields.
//! Nothing depends on the compiler's layout, `mem::discriminant` or the build's flags, so the
//! hash of a value is the same in every build, on every platform and for every worker count. It
//! does change when fields or variants are reordered, added or removed: that is a different type.
//!
//! | shape | what is hashed |
//! |---|---|
//! | `struct S { a: A, b: B }` | `a`, then `b` |
//! | `struct S(A, B);` | `.0`, then `.1` |
//! | `struct S;` (a tag) | nothing: the world hash already records whether an entity has it |
//! | `enum E { X, Y(A), Z { b: B } }` | the variant index (`0`, `1`, `2` as `u32`), then its fields |
//!
//! For a struct the derive also sets `StableHash::PLAIN_BYTES`, which lets a world digest
//! (`Registry::digest`) hash a column of the type as raw memory: yes when, checked by a constant
//! the compiler evaluates, every field's type is itself `PLAIN_BYTES`, the fields lie in
//! declaration order from offset 0, and their sizes add up to `size_of::<Self>()` (no padding);
//! no when any of that fails, when a field is skipped, for every enum, and for a struct whose
//! last field may be unsized (a slice, `str`, `dyn Trait` or a `?Sized` type parameter). The
//! answer never changes what `stable_hash` feeds, only how fast a digest reads it.
//!
//! Attributes:
//!
//! - `#[stable_hash(skip)]` on a field leaves it out (a cache, a debug counter);
//! - `#[stable_hash(crate = "path")]` on the type names the crate that exports `StableHash` and
//!   `StableHasher`, for code that reaches them by another path (default `::freyr::hash`; inside
//!   Freyr's own sub-crates, `freyr_query`).
//!
//! A `#[stable_hash(...)]` on a variant is an error (every variant is hashed; skip its fields
//! one by one):
//!
//! ```compile_fail
//! #[derive(freyr::StableHash)]
//! enum Event {
//!     #[stable_hash(skip)]
//!     Debug(u32),
//!     Hit(u32),
//! }
//! ```
//!
//! A `#[repr(packed)]` struct hashes a copy of each field (its fields may be unaligned), so its
//! field types must be `Copy`, as for the standard derives.
//!
//! Each type parameter `T` gets a `T: StableHash` bound. Unions are rejected: which field is
//! live is not known.
//!
//! # Examples
//!
//! ```
//! use freyr::StableHash;
//! use freyr::hash::StableHasher;
//!
//! #[derive(StableHash)]
//! struct Position {
//!     x: f32,
//!     y: f32,
//! }
//!
//! #[derive(StableHash)]
//! enum Order {
//!     Idle,
//!     MoveTo(Position),
//!     Follow { target: freyr::Entity, distance: f32 },
//! }
//!
//! fn hash(v: &impl StableHash) -> u64 {
//!     let mut h = StableHasher::new();
//!     v.stable_hash(&mut h);
//!     core::hash::Hasher::finish(&h)
//! }
//!
//! // Field order matters, and floats hash by their bits.
//! assert_ne!(hash(&Position { x: 1.0, y: 2.0 }), hash(&Position { x: 2.0, y: 1.0 }));
//! assert_ne!(hash(&Position { x: 0.0, y: 0.0 }), hash(&Position { x: -0.0, y: 0.0 }));
//! // `Position` is two `f32`s with no padding: a digest reads its column as raw memory.
//! assert!(<Position as StableHash>::PLAIN_BYTES.claimed());
//! assert!(!<Order as StableHash>::PLAIN_BYTES.claimed());
//! // The variant index comes first: `Idle` is the index 0 and nothing else.
//! assert_eq!(hash(&Order::Idle), hash(&0u32));
//! assert_ne!(hash(&Order::MoveTo(Position { x: 0.0, y: 0.0 })), hash(&Order::Idle));
//! ```
//!
//! A union does not compile:
//!
//! ```compile_fail
//! #[derive(freyr::StableHash)]
//! union Bits {
//!     f: f32,
//!     u: u32,
//! }
//! ```
//!
//! Nor does a field whose type has no `StableHash`:
//!
//! ```compile_fail
//! struct Opaque;
//! #[derive(freyr::StableHash)]
//! struct Holder(Opaque);
//! ```

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Data, DeriveInput, Fields, GenericParam, Generics, Index, LitStr, Path, Token,
    TraitBoundModifier, Type, TypeParamBound, WherePredicate, parse_macro_input, parse_quote,
};

/// Derives `StableHash`: the fields in declaration order, after the variant index for an enum.
///
/// See the [crate documentation](crate) for what is hashed and the `#[stable_hash(...)]`
/// attributes.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
///
/// #[derive(StableHash)]
/// struct Health(u32);
/// #[derive(StableHash)]
/// struct Frozen; // a tag: its presence is hashed by the world hash
///
/// let hash = |frozen: bool| {
///     let mut registry = Registry::with_workers(1);
///     let e = registry.spawn((Health(10),));
///     if frozen {
///         registry.insert(e, (Frozen,)).unwrap();
///     }
///     registry.world_hash::<(Health, Frozen)>()
/// };
/// assert_eq!(hash(true), hash(true));
/// assert_ne!(hash(true), hash(false));
/// ```
#[proc_macro_derive(StableHash, attributes(stable_hash))]
pub fn derive_stable_hash(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The `#[stable_hash(...)]` keys a type accepts.
struct ContainerOptions {
    krate: Path,
}

fn container_options(attrs: &[Attribute]) -> syn::Result<ContainerOptions> {
    let mut krate: Path = parse_quote!(::freyr::hash);
    for attr in attrs.iter().filter(|a| a.path().is_ident("stable_hash")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                krate = lit.parse()?;
                Ok(())
            } else if meta.path.is_ident("skip") {
                Err(meta.error("`skip` goes on a field, not on the type"))
            } else {
                Err(meta.error(
                    "unknown stable_hash attribute: expected `crate = \"path\"` on the type",
                ))
            }
        })?;
    }
    Ok(ContainerOptions { krate })
}

/// Whether a field carries `#[stable_hash(skip)]`.
fn is_skipped(attrs: &[Attribute]) -> syn::Result<bool> {
    let mut skip = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("stable_hash")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else if meta.path.is_ident("crate") {
                Err(meta.error("`crate = \"...\"` goes on the type, not on a field"))
            } else {
                Err(meta.error("unknown stable_hash attribute: expected `skip` on a field"))
            }
        })?;
    }
    Ok(skip)
}

/// Whether the type is `#[repr(packed)]` or `#[repr(packed(N))]`: its fields may then be
/// unaligned, so the derive hashes a copy of each (which needs the field types to be `Copy`).
fn is_packed(attrs: &[Attribute]) -> syn::Result<bool> {
    let mut packed = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("packed") {
                packed = true;
            }
            // Skip `(N)` of `packed(N)` / `align(N)`; other reprs are bare words.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream2>()?;
            }
            Ok(())
        })?;
    }
    Ok(packed)
}

/// A pattern binding the hashed fields of `fields` as `__f0, __f1, ...`, and the statements that
/// hash them in order.
fn bind_fields(fields: &Fields, krate: &Path) -> syn::Result<(TokenStream2, TokenStream2)> {
    let mut hashes = Vec::new();
    let pattern = match fields {
        Fields::Named(named) => {
            let mut parts = Vec::new();
            for (i, f) in named.named.iter().enumerate() {
                let name = f.ident.as_ref().expect("named fields have names");
                if is_skipped(&f.attrs)? {
                    parts.push(quote!(#name: _));
                } else {
                    let bind = format_ident!("__f{}", i);
                    hashes.push(quote!(#krate::StableHash::stable_hash(#bind, __hasher);));
                    parts.push(quote!(#name: #bind));
                }
            }
            quote!({ #(#parts),* })
        }
        Fields::Unnamed(unnamed) => {
            let mut parts = Vec::new();
            for (i, f) in unnamed.unnamed.iter().enumerate() {
                if is_skipped(&f.attrs)? {
                    parts.push(quote!(_));
                } else {
                    let bind = format_ident!("__f{}", i);
                    hashes.push(quote!(#krate::StableHash::stable_hash(#bind, __hasher);));
                    parts.push(quote!(#bind));
                }
            }
            quote!(( #(#parts),* ))
        }
        Fields::Unit => quote!(),
    };
    Ok((pattern, quote!(#(#hashes)*)))
}

/// Whether `ty`, a struct's last field, may be unsized: a slice, `str`, a trait object, or a
/// type parameter declared `?Sized` (in its bounds or the where clause).
fn maybe_unsized(ty: &Type, generics: &Generics) -> bool {
    let relaxed = |bounds: &Punctuated<TypeParamBound, Token![+]>| {
        bounds.iter().any(|b| match b {
            TypeParamBound::Trait(t) => matches!(t.modifier, TraitBoundModifier::Maybe(_)),
            _ => false,
        })
    };
    match ty {
        Type::Slice(_) | Type::TraitObject(_) => true,
        Type::Paren(p) => maybe_unsized(&p.elem, generics),
        Type::Group(g) => maybe_unsized(&g.elem, generics),
        Type::Path(p) if p.qself.is_none() => {
            let Some(ident) = p.path.get_ident() else {
                return false;
            };
            ident == "str"
                || generics
                    .type_params()
                    .any(|t| t.ident == *ident && relaxed(&t.bounds))
                || generics.where_clause.as_ref().is_some_and(|w| {
                    w.predicates.iter().any(|pred| {
                        matches!(pred, WherePredicate::Type(pt)
                            if matches!(&pt.bounded_ty, Type::Path(b) if b.path.is_ident(ident))
                                && relaxed(&pt.bounds))
                    })
                })
        }
        _ => false,
    }
}

/// `PLAIN_BYTES` for a struct: yes when, checked at compile time, every field is plain and the
/// fields lie in declaration order from offset 0 with no padding anywhere; nothing (the default,
/// no) when a field is skipped, since the memory then holds bytes the hash does not feed.
fn plain_bytes(fields: &Fields, generics: &Generics, krate: &Path) -> syn::Result<TokenStream2> {
    if fields
        .iter()
        .last()
        .is_some_and(|f| maybe_unsized(&f.ty, generics))
    {
        // An unsized struct has no `size_of` to check: the default, no.
        return Ok(quote!());
    }
    let mut checks = Vec::new();
    let mut end = quote!(0usize);
    for (i, f) in fields.iter().enumerate() {
        if is_skipped(&f.attrs)? {
            return Ok(quote!());
        }
        let ty = &f.ty;
        let access = match &f.ident {
            Some(ident) => quote!(#ident),
            None => {
                let index = Index::from(i);
                quote!(#index)
            }
        };
        checks.push(quote! {
            <#ty as #krate::StableHash>::PLAIN_BYTES.claimed()
                && ::core::mem::offset_of!(Self, #access) == #end
        });
        end = quote!(#end + ::core::mem::size_of::<#ty>());
    }
    // SAFETY (of the generated block): a yes needs every field plain (all bytes initialised, no
    // pointers, memory = its stable-hash bytes on a little-endian target), each field starting
    // where the previous one ends, from offset 0, and the fields' sizes adding up to the
    // struct's size: then the struct has no padding and its memory is its fields' bytes in
    // declaration order, which is exactly what the derived `stable_hash` feeds.
    Ok(quote! {
        const PLAIN_BYTES: #krate::PlainBytes<Self> = unsafe {
            #krate::PlainBytes::new_unchecked(
                true #(&& #checks)* && ::core::mem::size_of::<Self>() == #end
            )
        };
    })
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let ContainerOptions { krate } = container_options(&input.attrs)?;
    let name = &input.ident;

    let plain = match &input.data {
        Data::Struct(data) => plain_bytes(&data.fields, &input.generics, &krate)?,
        _ => quote!(),
    };
    let body = match &input.data {
        Data::Struct(data) => {
            let packed = is_packed(&input.attrs)?;
            let mut hashes = Vec::new();
            for (i, f) in data.fields.iter().enumerate() {
                if is_skipped(&f.attrs)? {
                    continue;
                }
                let access = match &f.ident {
                    Some(ident) => quote!(#ident),
                    None => {
                        let index = Index::from(i);
                        quote!(#index)
                    }
                };
                // A packed struct's fields may be unaligned: hash a copy, as std's derives do.
                let field = if packed {
                    quote!(&{ self.#access })
                } else {
                    quote!(&self.#access)
                };
                hashes.push(quote!(#krate::StableHash::stable_hash(#field, __hasher);));
            }
            quote! {
                let _ = &__hasher;
                #(#hashes)*
            }
        }
        Data::Enum(data) => {
            let mut arms = Vec::new();
            for (index, variant) in data.variants.iter().enumerate() {
                let index = u32::try_from(index).map_err(|_| {
                    syn::Error::new_spanned(variant, "StableHash supports up to u32::MAX variants")
                })?;
                if let Some(attr) = variant
                    .attrs
                    .iter()
                    .find(|a| a.path().is_ident("stable_hash"))
                {
                    return Err(syn::Error::new_spanned(
                        attr,
                        "stable_hash attributes go on the type or on a field, not on a variant: \
                         every variant is hashed",
                    ));
                }
                let ident = &variant.ident;
                let (pattern, hashes) = bind_fields(&variant.fields, &krate)?;
                arms.push(quote! {
                    Self::#ident #pattern => {
                        #krate::StableHash::stable_hash(&#index, __hasher);
                        #hashes
                    }
                });
            }
            if arms.is_empty() {
                // No value of an empty enum exists; `*self` makes the empty match exhaustive.
                quote! {
                    let _ = &__hasher;
                    match *self {}
                }
            } else {
                quote! {
                    match self {
                        #(#arms)*
                    }
                }
            }
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "StableHash cannot be derived for a union: which field is live is not known; \
                 implement StableHash by hand",
            ));
        }
    };

    let mut generics = input.generics.clone();
    let params: Vec<_> = generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.clone()),
            _ => None,
        })
        .collect();
    let where_clause = generics.make_where_clause();
    for ident in params {
        where_clause
            .predicates
            .push(parse_quote!(#ident: #krate::StableHash));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();

    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics #krate::StableHash for #name #ty_generics #where_clause {
            #plain
            fn stable_hash(&self, __hasher: &mut #krate::StableHasher) {
                #body
            }
        }
    })
}
